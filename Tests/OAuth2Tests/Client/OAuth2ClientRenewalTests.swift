import Foundation
import OAuth2
import OAuth2Testing
import Testing

/// Machine clients renew themselves: a token from client credentials or an
/// assertion grant has no refresh token, so the grant runs again.
@Suite struct OAuth2ClientRenewalTests {
    @Test func anExpiredClientCredentialsTokenIsRenewedByTheGrantWithTheSameScopes() async throws {
        let harness = try ClientHarness()
        let client = harness.client("service")
        harness.transport.enqueue(
            json: Fixture.tokenJSON(access: "cc-1", refresh: nil, expiresIn: 60, scope: "read write"), for: Fixture.tokenURL)
        try await client.authenticate(.clientCredentials(scopes: ["read", "write"]))
        harness.clock.advance(by: .seconds(120))
        harness.transport.enqueue(json: Fixture.tokenJSON(access: "cc-2", refresh: nil, expiresIn: 60), for: Fixture.tokenURL)
        harness.transport.enqueue(HTTPTransportResponse(status: 200), for: Fixture.apiURL)

        let response = try await client.send(HTTPTransportRequest(url: Fixture.apiURL))

        #expect(response.status == 200)
        #expect(harness.transport.requests(for: Fixture.apiURL).map(\.authorization) == ["Bearer cc-2"])
        let renewal = Fixture.formFields(try #require(harness.tokenRequests.last).body)
        #expect(harness.tokenRequests.count == 2)
        #expect(renewal["grant_type"] == "client_credentials")
        #expect(renewal["scope"] == "read write")
        let stored = try #require(try await harness.store.load(account: "service"))
        #expect(stored.accessToken.value == "cc-2")
        #expect(stored.grant == TokenGrant(type: "client_credentials", scopes: ["read", "write"]))
    }

    @Test func aClientCredentialsTokenStoredByAnotherProcessIsRenewedHere() async throws {
        let harness = try ClientHarness()
        var stored = Fixture.token(access: "cc-old", refresh: nil, expiresAt: harness.clock.now().addingTimeInterval(-5), scopes: ["read"])
        stored.grant = TokenGrant(type: TokenGrant.clientCredentialsType, scopes: ["read"])
        stored.binding = harness.provider.configuration.binding
        try await harness.store.save(stored, account: "service")
        harness.transport.enqueue(json: Fixture.tokenJSON(access: "cc-new", refresh: nil), for: Fixture.tokenURL)
        harness.transport.enqueue(HTTPTransportResponse(status: 200), for: Fixture.apiURL)

        _ = try await harness.client("service").send(HTTPTransportRequest(url: Fixture.apiURL))

        #expect(Fixture.formFields(harness.tokenRequests.first?.body)["grant_type"] == "client_credentials")
        #expect(harness.transport.requests(for: Fixture.apiURL).first?.authorization == "Bearer cc-new")
    }

    @Test func a401OnAClientCredentialsTokenRenewsOnceAndRetries() async throws {
        let harness = try ClientHarness()
        let client = harness.client("service")
        harness.transport.enqueue(json: Fixture.tokenJSON(access: "cc-1", refresh: nil, expiresIn: 3600), for: Fixture.tokenURL)
        try await client.authenticate(.clientCredentials)
        harness.transport.enqueue(
            HTTPTransportResponse(status: 401, headers: [.wwwAuthenticate: "Bearer error=\"invalid_token\""]), for: Fixture.apiURL)
        harness.transport.enqueue(json: Fixture.tokenJSON(access: "cc-2", refresh: nil, expiresIn: 3600), for: Fixture.tokenURL)
        harness.transport.enqueue(HTTPTransportResponse(status: 200), for: Fixture.apiURL)

        let response = try await client.send(HTTPTransportRequest(url: Fixture.apiURL))

        #expect(response.status == 200)
        #expect(harness.tokenRequests.count == 2)
        #expect(harness.transport.requests(for: Fixture.apiURL).map(\.authorization) == ["Bearer cc-1", "Bearer cc-2"])
    }

    @Test func aRefreshTokenIsUsedFirstWhenTheGrantIssuedOne() async throws {
        let harness = try ClientHarness()
        let client = harness.client("service")
        harness.transport.enqueue(json: Fixture.tokenJSON(access: "cc-1", refresh: "rt-cc", expiresIn: 60), for: Fixture.tokenURL)
        try await client.authenticate(.clientCredentials)
        harness.clock.advance(by: .seconds(120))
        harness.transport.enqueue(json: Fixture.tokenJSON(access: "cc-2", refresh: "rt-cc-2"), for: Fixture.tokenURL)

        let token = try await client.token()

        #expect(token.accessToken.value == "cc-2")
        let fields = Fixture.formFields(harness.tokenRequests.last?.body)
        #expect(fields["grant_type"] == "refresh_token")
        #expect(fields["refresh_token"] == "rt-cc")
        #expect(token.grant?.type == TokenGrant.clientCredentialsType)
    }

    @Test func aRefusedRefreshTokenFallsBackToTheGrantAndIsNotCarriedOver() async throws {
        let harness = try ClientHarness()
        let client = harness.client("service")
        harness.transport.enqueue(json: Fixture.tokenJSON(access: "cc-1", refresh: "rt-dead", expiresIn: 60), for: Fixture.tokenURL)
        try await client.authenticate(.clientCredentials)
        harness.clock.advance(by: .seconds(120))
        harness.transport.enqueue(json: #"{"error":"invalid_grant"}"#, status: 400, for: Fixture.tokenURL)
        harness.transport.enqueue(json: Fixture.tokenJSON(access: "cc-2", refresh: nil), for: Fixture.tokenURL)

        let token = try await client.token()

        #expect(token.accessToken.value == "cc-2")
        #expect(token.refreshToken == nil)
        #expect(
            harness.tokenRequests.map { Fixture.formFields($0.body)["grant_type"] } == [
                "client_credentials", "refresh_token", "client_credentials",
            ])
        #expect(try await harness.store.load(account: "service")?.refreshToken == nil)
        #expect(token.grant?.type == TokenGrant.clientCredentialsType)
    }

    @Test func aPublicClientsTokenIsNotRenewedByClientCredentials() async throws {
        let configuration = try OAuth2Configuration(clientID: "public-1", tokenEndpoint: Fixture.tokenURL)
        let harness = try ClientHarness(configuration: configuration)
        var stored = Fixture.token(access: "cc-old", refresh: nil, expiresAt: harness.clock.now().addingTimeInterval(-5))
        stored.grant = TokenGrant(type: TokenGrant.clientCredentialsType, scopes: [])
        try await harness.store.save(stored, account: "service")

        let token = try await harness.client("service").token()

        // Used as it is: only the resource server's 401 can say it is dead.
        #expect(token.accessToken.value == "cc-old")
        #expect(harness.tokenRequests.isEmpty)
    }

    @Test func anAssertionGrantRunsAgainWithAFreshAssertion() async throws {
        let made = LockedValue(0)
        var configuration = try Fixture.configuration()
        configuration.assertionGrant = .jwtBearer {
            let n = made.withLock {
                $0 += 1
                return $0
            }
            return Secret("assertion-\(n)")
        }
        let harness = try ClientHarness(configuration: configuration)
        let client = harness.client("robot")
        harness.transport.enqueue(json: Fixture.tokenJSON(access: "jwt-1", refresh: nil, expiresIn: 60), for: Fixture.tokenURL)
        try await client.authenticate(.assertion(scopes: ["read"]))
        harness.clock.advance(by: .seconds(120))
        harness.transport.enqueue(json: Fixture.tokenJSON(access: "jwt-2", refresh: nil, expiresIn: 60), for: Fixture.tokenURL)

        let token = try await client.token()

        #expect(token.accessToken.value == "jwt-2")
        let requests = harness.tokenRequests.map { Fixture.formFields($0.body) }
        #expect(requests.map { $0["grant_type"] } == [TokenGrant.jwtBearerType, TokenGrant.jwtBearerType])
        #expect(requests.map { $0["assertion"] } == ["assertion-1", "assertion-2"])
        #expect(requests.map { $0["scope"] } == ["read", "read"])
        #expect(!harness.logs.all.contains { $0.contains("assertion-") })
    }

    @Test func anAssertionGrantThatCannotMakeAnAssertionIsInvalidConfiguration() async throws {
        struct KeyMissing: Error {}
        var configuration = try Fixture.configuration()
        configuration.assertionGrant = .jwtBearer { throw KeyMissing() }
        let harness = try ClientHarness(configuration: configuration)

        let error = await oauth2Error { try await harness.client("robot").authenticate(.assertion) }

        #expect(error?.code == .invalidConfiguration)
        #expect(harness.tokenRequests.isEmpty)
    }

    @Test func aRenewalRefusedWithInvalidClientLosesTheToken() async throws {
        let harness = try ClientHarness()
        let delegate = RecordingDelegate()
        let client = harness.client("service", delegate: delegate)
        harness.transport.enqueue(json: Fixture.tokenJSON(access: "cc-1", refresh: nil, expiresIn: 60), for: Fixture.tokenURL)
        try await client.authenticate(.clientCredentials)
        harness.clock.advance(by: .seconds(120))
        harness.transport.enqueue(json: #"{"error":"invalid_client"}"#, status: 401, for: Fixture.tokenURL)

        let error = await oauth2Error { _ = try await client.token() }

        #expect(error?.code == .invalidClient)
        #expect(try await harness.store.load(account: "service") == nil)
        #expect(delegate.events.contains { if case .lostAccessToken = $0 { true } else { false } })
    }
}
