import Foundation
import MutualTLSFixture
import OAuth2
import OAuth2Testing
import Testing

/// Mutual TLS (RFC 8705) through the provider and the client: the
/// configuration's certificate on every request to the provider,
/// `tls_client_auth`, and tokens bound to the certificate they were obtained with.
@Suite struct OAuth2ClientMutualTLSTests {
    private func configuration(
        _ certificate: ClientCertificate?, authentication: ClientAuthentication = .tlsClientAuth
    ) throws -> OAuth2Configuration {
        try OAuth2Configuration(
            clientID: "client-1",
            tokenEndpoint: Fixture.tokenURL,
            revocationEndpoint: Fixture.revokeURL,
            defaultScopes: ["read"],
            clientAuthentication: authentication,
            clientCertificate: certificate
        )
    }

    @Test func tlsClientAuthSendsTheClientIDAndTheCertificateAndNoSecret() async throws {
        let first = try ClientCertificateFixtures.first
        let harness = try ClientHarness(configuration: configuration(first))
        harness.transport.enqueue(json: Fixture.tokenJSON(), for: Fixture.tokenURL)

        let token = try await harness.provider.token(for: .clientCredentials)

        let sent = try #require(harness.tokenRequests.first)
        #expect(sent.clientCertificate == first)
        #expect(sent.headers[.authorization] == nil)
        let form = Fixture.formFields(sent.body)
        #expect(form["client_id"] == "client-1")
        #expect(form["client_secret"] == nil)
        #expect(form["client_assertion"] == nil)
        #expect(token.certificateThumbprint == ClientCertificateFixtures.firstThumbprint)
    }

    @Test func selfSignedTLSClientAuthIsTheSameOnTheWire() async throws {
        let first = try ClientCertificateFixtures.first
        let harness = try ClientHarness(configuration: configuration(first, authentication: .selfSignedTLSClientAuth))
        harness.transport.enqueue(json: Fixture.tokenJSON(), for: Fixture.tokenURL)

        _ = try await harness.provider.token(for: .clientCredentials)

        let sent = try #require(harness.tokenRequests.first)
        #expect(sent.clientCertificate == first)
        #expect(Fixture.formFields(sent.body)["client_id"] == "client-1")
        #expect(ClientAuthentication.selfSignedTLSClientAuth.description == "self_signed_tls_client_auth")
        #expect(ClientAuthentication(name: "tls_client_auth") == .tlsClientAuth)
    }

    @Test func tlsClientAuthWithoutACertificateIsRefused() throws {
        for method in [ClientAuthentication.tlsClientAuth, .selfSignedTLSClientAuth] {
            let error = FlowFixtures.error { () throws(OAuth2Error) in
                try OAuth2Configuration(clientID: "client-1", tokenEndpoint: Fixture.tokenURL, clientAuthentication: method)
            }
            #expect(error?.code == .invalidConfiguration)
            #expect(error?.message.contains("client certificate") == true)
        }
    }

    @Test func aTokenObtainedWithoutACertificateRecordsNone() async throws {
        let harness = try ClientHarness()
        harness.transport.enqueue(json: Fixture.tokenJSON(), for: Fixture.tokenURL)
        let token = try await harness.provider.token(for: .clientCredentials)
        #expect(token.certificateThumbprint == nil)
        #expect(harness.tokenRequests.first?.clientCertificate == nil)
    }

    @Test func sendPresentsTheCertificateTheTokenIsBoundTo() async throws {
        let first = try ClientCertificateFixtures.first
        let harness = try ClientHarness(configuration: configuration(first))
        harness.transport.enqueue(json: Fixture.tokenJSON(), for: Fixture.tokenURL)
        harness.transport.enqueue(json: "{}", for: Fixture.apiURL)
        let client = harness.client()
        _ = try await client.authenticate(.clientCredentials)

        _ = try await client.send(HTTPTransportRequest(url: Fixture.apiURL))

        #expect(harness.transport.requests(for: Fixture.apiURL).map(\.clientCertificate) == [first])
        let stored = try await harness.store.load(account: "alice")
        #expect(stored?.certificateThumbprint == ClientCertificateFixtures.firstThumbprint)
    }

    @Test func aStoredBoundTokenIsNotSentWhenTheConfigurationHasAnotherCertificate() async throws {
        let second = try ClientCertificateFixtures.second
        let harness = try ClientHarness(configuration: configuration(second))
        try await harness.seed(expiresIn: 3600)
        var token = try #require(try await harness.store.load(account: "alice"))
        token.certificateThumbprint = ClientCertificateFixtures.firstThumbprint
        try await harness.store.save(token, account: "alice")

        let error = await oauth2Error { _ = try await harness.client().send(HTTPTransportRequest(url: Fixture.apiURL)) }

        #expect(error?.code == .certificateMismatch)
        #expect(harness.transport.requests.isEmpty)
    }

    @Test func aStoredBoundTokenIsNotSentWithoutACertificate() async throws {
        let harness = try ClientHarness()
        try await harness.seed(expiresIn: 3600)
        var token = try #require(try await harness.store.load(account: "alice"))
        token.certificateThumbprint = ClientCertificateFixtures.firstThumbprint
        try await harness.store.save(token, account: "alice")

        let error = await oauth2Error { _ = try await harness.client().send(HTTPTransportRequest(url: Fixture.apiURL)) }

        #expect(error?.code == .certificateMismatch)
        #expect(harness.transport.requests.isEmpty)
    }

    @Test func revocationPresentsTheCertificate() async throws {
        let first = try ClientCertificateFixtures.first
        let harness = try ClientHarness(configuration: configuration(first))
        // The refresh token and the access token.
        harness.transport.enqueue(HTTPTransportResponse(status: 200), for: Fixture.revokeURL)
        harness.transport.enqueue(HTTPTransportResponse(status: 200), for: Fixture.revokeURL)

        try await harness.provider.revoke(Fixture.token(expiresAt: nil))

        #expect(harness.transport.requests(for: Fixture.revokeURL).map(\.clientCertificate) == [first, first])
        #expect(Fixture.formFields(harness.transport.requests(for: Fixture.revokeURL).first?.body)["client_id"] == "client-1")
    }

    @Test func theThumbprintIsStoredWithTheTokenAndShownInItsMirror() throws {
        var token = AccessToken(accessToken: Secret("at-0000000000000000000009"))
        token.certificateThumbprint = ClientCertificateFixtures.firstThumbprint
        let decoded = try JSONDecoder().decode(AccessToken.self, from: JSONEncoder().encode(token))
        #expect(decoded.certificateThumbprint == ClientCertificateFixtures.firstThumbprint)
        var dumped = ""
        dump(token, to: &dumped)
        #expect(dumped.contains(ClientCertificateFixtures.firstThumbprint))
    }
}
