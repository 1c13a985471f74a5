import Foundation
import OAuth2
import Testing

/// ``ClientRegistrar`` against django-oauth-toolkit's registration endpoint
/// (RFC 7591) and client configuration endpoint (RFC 7592), which rotates the
/// registration access token on every update.
@Suite(.enabled(if: Provider.mainIsConfigured, "needs the local provider: `make test` starts it and sets OAUTH2_IT_PROVIDER"))
struct ClientRegistrationTests {
    static let callback = URL(string: "http://127.0.0.1:8765/callback")!

    /// The provider's RFC 8414 document (its OpenID configuration has no `registration_endpoint`).
    static func registrar(_ provider: Provider, transport: CurlTransport) async throws -> ClientRegistrar {
        let url = try #require(URL(string: provider.endpoints.metadata))
        let response = try await transport.send(HTTPTransportRequest(url: url, redirects: .never))
        #expect(response.status.code == 200)
        let metadata = try JSONDecoder().decode(AuthorizationServerMetadata.self, from: response.body)
        #expect(metadata.registrationEndpoint != nil)
        return ClientRegistrar(metadata: metadata, transport: transport)
    }

    @Test func registerReadUpdateAndDeleteAPublicClient() async throws {
        let provider = try Provider.main()
        let transport = CurlTransport()
        let registrar = try await Self.registrar(provider, transport: transport)

        let registered = try await registrar.register(ClientMetadata(redirectURIs: [Self.callback], clientName: "reg-it"))
        #expect(registered.issuer == provider.issuer)
        #expect(!registered.clientID.isEmpty)
        #expect(registered.clientSecret == nil, "a public client gets no secret")
        #expect(registered.registrationAccessToken != nil)
        #expect(registered.registrationClientURI?.absoluteString.hasPrefix(provider.issuer) == true)
        #expect(registered.metadata.tokenEndpointAuthMethod == "none")
        #expect(registered.metadata.redirectURIs == [Self.callback])

        let read = try await registrar.read(registered)
        #expect(read.clientID == registered.clientID)
        #expect(read.metadata.clientName == "reg-it")

        var renamed = registered.metadata
        renamed.clientName = "reg-it renamed"
        let updated = try await registrar.update(registered, to: renamed)
        #expect(updated.metadata.clientName == "reg-it renamed")
        #expect(updated.registrationAccessToken != registered.registrationAccessToken, "DOT rotates the token on update")
        #expect(try await registrar.read(updated).metadata.clientName == "reg-it renamed")
        // The token the update replaced no longer works: the client is as good as forgotten to it.
        let spent = await #expect(throws: OAuth2Error.self) { _ = try await registrar.read(registered) }
        #expect(spent?.code == .invalidClient)
        #expect(spent?.httpStatus == 401)

        try await registrar.delete(updated)
        let forgotten = await #expect(throws: OAuth2Error.self) { _ = try await registrar.read(updated) }
        #expect(forgotten?.code == .invalidClient)
        #expect(forgotten?.httpStatus == 401)
    }

    @Test func aConfidentialRegistrationsSecretWorksAfterARoundTripThroughTheStore() async throws {
        let provider = try Provider.main()
        let transport = CurlTransport()
        let registrar = try await Self.registrar(provider, transport: transport)
        let registered = try await registrar.register(
            ClientMetadata(
                redirectURIs: [], grantTypes: ["client_credentials"], responseTypes: [], tokenEndpointAuthMethod: "client_secret_basic"))
        #expect(registered.clientSecret != nil)

        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("reg-it-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let key = try FileTokenStore.EncryptionKey(bytes: (0..<32).map { _ in UInt8.random(in: 0...255) })
        try await FileTokenStore(directory: directory, encryption: .aesGCM(key)).saveRegistration(registered)
        let kept = try #require(
            try await FileTokenStore(directory: directory, encryption: .aesGCM(key)).loadRegistration(issuer: provider.issuer))
        #expect(kept == registered)

        // The kept secret is the one the server will take: a client credentials grant with it.
        let configuration = try OAuth2Configuration(
            clientID: kept.clientID, clientSecret: kept.clientSecret, tokenEndpoint: try #require(URL(string: provider.endpoints.token)))
        let token = try await OAuth2Provider(configuration: configuration, transport: transport)
            .token(for: .clientCredentials(scopes: ["read"]))
        #expect(!token.accessToken.isEmpty)
        try await registrar.delete(kept)
    }

    @Test func invalidMetadataIsTheServersRFC7591Error() async throws {
        let provider = try Provider.main()
        let registrar = try await Self.registrar(provider, transport: CurlTransport())
        // A code client without redirect URIs.
        let error = await #expect(throws: OAuth2Error.self) {
            _ = try await registrar.register(ClientMetadata(redirectURIs: []))
        }
        #expect(error?.code == "invalid_client_metadata")
        #expect(error?.httpStatus == 400)
    }
}
