import Foundation
import OAuth2Testing
import Testing
@testable import OAuth2

@Suite struct OpenIDDiscoveryTests {
    static let document = """
        {"issuer": "https://id.example/tenant",
         "authorization_endpoint": "https://id.example/tenant/authorize",
         "token_endpoint": "https://id.example/tenant/token",
         "jwks_uri": "https://id.example/tenant/jwks",
         "userinfo_endpoint": "https://id.example/tenant/userinfo",
         "end_session_endpoint": "https://id.example/tenant/logout",
         "id_token_signing_alg_values_supported": ["RS256", "ES256", "HS256", "none"],
         "token_endpoint_auth_methods_supported": ["client_secret_post", "private_key_jwt"],
         "authorization_response_iss_parameter_supported": true}
        """

    @Test func theOpenIDConfigurationIsAppendedToTheIssuersPath() throws {
        #expect(
            try AuthorizationServerMetadata.wellKnownURL(forIssuer: "https://id.example/tenant/", document: .openIDConfiguration)
                .absoluteString
                == "https://id.example/tenant/.well-known/openid-configuration")
        #expect(
            try AuthorizationServerMetadata.wellKnownURL(forIssuer: "https://accounts.google.com", document: .openIDConfiguration)
                .absoluteString
                == "https://accounts.google.com/.well-known/openid-configuration")
        #expect(
            try AuthorizationServerMetadata.wellKnownURL(forIssuer: "https://id.example/tenant", document: .oauthAuthorizationServer)
                .absoluteString
                == "https://id.example/.well-known/oauth-authorization-server/tenant")
    }

    @Test func discoverReadsTheOpenIDConfigurationFirst() async throws {
        let transport = CannedTransport()
        transport.enqueue(json: Self.document)
        let metadata = try await AuthorizationServerMetadata.discover(issuer: "https://id.example/tenant", transport: transport)
        #expect(metadata.isOpenIDProvider)
        #expect(metadata.jwksURI == URL(string: "https://id.example/tenant/jwks"))
        #expect(metadata.userinfoEndpoint == URL(string: "https://id.example/tenant/userinfo"))
        #expect(metadata.endSessionEndpoint == URL(string: "https://id.example/tenant/logout"))
        #expect(metadata.idTokenSigningAlgValuesSupported == ["RS256", "ES256", "HS256", "none"])
        #expect(transport.requests.map(\.url.absoluteString) == ["https://id.example/tenant/.well-known/openid-configuration"])
        #expect(transport.requests.first?.redirects == .never)
    }

    @Test func discoverFallsBackToRFC8414OnlyWhenTheIssuerHasNoOpenIDConfiguration() async throws {
        let transport = CannedTransport()
        transport.enqueue(json: #"{"error": "not found"}"#, status: 404)
        transport.enqueue(json: #"{"issuer": "https://as.example", "token_endpoint": "https://as.example/token"}"#)
        let metadata = try await AuthorizationServerMetadata.discover(issuer: "https://as.example", transport: transport)
        #expect(!metadata.isOpenIDProvider)
        #expect(
            transport.requests.map(\.url.absoluteString) == [
                "https://as.example/.well-known/openid-configuration",
                "https://as.example/.well-known/oauth-authorization-server",
            ])

        let down = CannedTransport()
        down.enqueue(json: "{}", status: 503)
        let error = await #expect(throws: OAuth2Error.self) {
            _ = try await AuthorizationServerMetadata.discover(issuer: "https://as.example", transport: down)
        }
        #expect(error?.code == .httpError)
        #expect(down.requests.count == 1)
    }

    @Test func anOpenIDEndpointOverPlainHTTPIsRefused() async throws {
        for key in ["jwks_uri", "userinfo_endpoint", "end_session_endpoint"] {
            let transport = CannedTransport()
            transport.enqueue(
                json: #"{"issuer": "https://id.example", "token_endpoint": "https://id.example/token", "\#(key)": "http://id.example/x"}"#)
            let error = await #expect(throws: OAuth2Error.self) {
                _ = try await AuthorizationServerMetadata.discover(issuer: "https://id.example", transport: transport)
            }
            #expect(error?.code == .insecureEndpoint, "\(key)")
        }
    }

    @Test func anOpenIDConfigurationForAnotherIssuerIsRefused() async throws {
        let transport = CannedTransport()
        transport.enqueue(json: Self.document)
        let error = await #expect(throws: OAuth2Error.self) {
            _ = try await AuthorizationServerMetadata.discover(issuer: "https://id.example/other", transport: transport)
        }
        #expect(error?.code == .issuerMismatch)
    }

    @Test func aConfigurationFromAnIssuerInOneCall() async throws {
        let transport = CannedTransport()
        transport.enqueue(json: Self.document)
        let configuration = try await OAuth2Configuration.discover(
            issuer: "https://id.example/tenant", clientID: "app", clientSecret: Secret("a-secret"), transport: transport
        )
        #expect(configuration.issuer == "https://id.example/tenant")
        #expect(configuration.requiresIssuerInRedirect)
        #expect(configuration.tokenEndpoint == URL(string: "https://id.example/tenant/token"))
        #expect(configuration.authorizationEndpoint == URL(string: "https://id.example/tenant/authorize"))
        // Basic is not listed, post is.
        #expect(configuration.clientAuthentication == .clientSecretPost)
        let openID = try #require(configuration.openID)
        #expect(openID.jwksURI == URL(string: "https://id.example/tenant/jwks"))
        // HS256 and none are never allowed for ID tokens, whatever the provider lists.
        #expect(openID.signingAlgorithms == [.rs256, .es256])
    }

    @Test func theCacheAsksTheProviderOncePerMaxAge() async throws {
        let transport = CannedTransport()
        let clock = ManualClock()
        transport.respond { _ in
            HTTPTransportResponse(status: 200, headers: [.contentType: "application/json"], body: Data(Self.document.utf8))
        }
        let cache = MetadataCache(transport: transport, maxAge: .seconds(3600), clock: clock)
        for _ in 0..<3 {
            _ = try await cache.metadata(issuer: "https://id.example/tenant")
        }
        #expect(transport.requests.count == 1)
        clock.advance(by: .seconds(3601))
        _ = try await cache.metadata(issuer: "https://id.example/tenant")
        #expect(transport.requests.count == 2)
    }

    @Test func aFailedDiscoveryIsNotCached() async throws {
        let transport = CannedTransport()
        transport.enqueue(error: HTTPTransportError.timeout)
        transport.enqueue(json: Self.document)
        let cache = MetadataCache(transport: transport, clock: ManualClock())
        await #expect(throws: OAuth2Error.self) { _ = try await cache.metadata(issuer: "https://id.example/tenant") }
        let metadata = try await cache.metadata(issuer: "https://id.example/tenant")
        #expect(metadata.isOpenIDProvider)
    }

    @Test func oldCachedMetadataWithoutTheOpenIDFieldsStillDecodes() throws {
        let json =
            #"{"issuer": "https://as.example", "token_endpoint": "https://as.example/token", "authorization_response_iss_parameter_supported": false, "code_challenge_methods_supported": [], "token_endpoint_auth_methods_supported": []}"#
        let metadata = try JSONDecoder().decode(AuthorizationServerMetadata.self, from: Data(json.utf8))
        #expect(metadata.jwksURI == nil)
        #expect(metadata.scopesSupported.isEmpty)
    }
}
