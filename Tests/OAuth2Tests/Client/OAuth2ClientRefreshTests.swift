import Foundation
import OAuth2
import OAuth2Testing
import Testing

@Suite struct OAuth2ClientRefreshTests {
    @Test func newRefreshTokenReplacesTheOldOne() async throws {
        let harness = try ClientHarness()
        try await harness.seed(expiresIn: 3600)
        harness.transport.enqueue(json: Fixture.tokenJSON(access: "at-2", refresh: "rt-rotated"), for: Fixture.tokenURL)
        let token = try await harness.client().refreshAccessToken()
        #expect(token.refreshToken?.value == "rt-rotated")
        #expect(try await harness.store.load(account: "alice")?.refreshToken?.value == "rt-rotated")
        let fields = Fixture.formFields(harness.tokenRequests.first?.body)
        #expect(fields["grant_type"] == "refresh_token")
        #expect(fields["refresh_token"] == Fixture.refreshToken)
    }

    @Test func refreshTokenIsKeptWhenTheProviderSendsNone() async throws {
        let harness = try ClientHarness()
        try await harness.seed(expiresIn: 3600)
        harness.transport.enqueue(json: Fixture.tokenJSON(access: "at-2", refresh: nil), for: Fixture.tokenURL)
        let token = try await harness.client().refreshAccessToken()
        #expect(token.accessToken.value == "at-2")
        #expect(token.refreshToken?.value == Fixture.refreshToken)
        #expect(try await harness.store.load(account: "alice")?.refreshToken?.value == Fixture.refreshToken)
    }

    @Test func grantedScopesAreKeptWhenTheRefreshResponseNamesNone() async throws {
        let harness = try ClientHarness()
        try await harness.store.save(Fixture.token(expiresAt: harness.clock.now(), scopes: ["read", "write"]), account: "alice")
        harness.transport.enqueue(json: Fixture.tokenJSON(access: "at-2"), for: Fixture.tokenURL)
        let token = try await harness.client().refreshAccessToken()
        #expect(token.scopes == ["read", "write"])
    }

    @Test func aRefreshNeverAsksForAScope() async throws {
        // RFC 6749 §6: a refresh may only ask for granted scopes; asking for none
        // gets exactly those, so neither the configuration's defaults nor what the
        // sign-in asked for (more than the provider granted) is sent.
        let harness = try ClientHarness(configuration: Fixture.configuration(defaultScopes: ["read", "write", "admin"]))
        var narrowed = Fixture.token(expiresAt: harness.clock.now().addingTimeInterval(-10), scopes: ["read"])
        narrowed.grant = TokenGrant(type: "authorization_code", scopes: ["read", "write"])
        narrowed.binding = harness.provider.configuration.binding
        try await harness.store.save(narrowed, account: "alice")
        let client = harness.client()

        harness.transport.enqueue(json: Fixture.tokenJSON(access: "at-2", refresh: "rt-2"), for: Fixture.tokenURL)
        harness.transport.enqueue(HTTPTransportResponse(status: 200), for: Fixture.apiURL)
        _ = try await client.send(HTTPTransportRequest(url: Fixture.apiURL))
        harness.transport.enqueue(json: Fixture.tokenJSON(access: "at-3", refresh: "rt-3"), for: Fixture.tokenURL)
        _ = try await client.refreshAccessToken()

        #expect(harness.tokenRequests.count == 2)
        for request in harness.tokenRequests {
            let fields = Fixture.formFields(request.body)
            #expect(fields["grant_type"] == "refresh_token")
            #expect(fields["scope"] == nil)
        }
        #expect(try await harness.store.load(account: "alice")?.scopes == ["read"])
    }

    @Test func aTokenShorterLivedThanTheSkewIsUsedForHalfItsLife() async throws {
        let harness = try ClientHarness()
        let client = harness.client("service")
        harness.transport.enqueue(json: Fixture.tokenJSON(access: "at-1", refresh: "rt-1", expiresIn: 2), for: Fixture.tokenURL)
        let token = try await client.authenticate(.clientCredentials)
        #expect(token.issuedAt == harness.clock.now())

        harness.clock.advance(by: .milliseconds(900))
        #expect(try await client.token().accessToken.value == "at-1")
        harness.clock.advance(by: .milliseconds(200))
        harness.transport.enqueue(json: Fixture.tokenJSON(access: "at-2", refresh: "rt-2", expiresIn: 2), for: Fixture.tokenURL)
        #expect(try await client.token().accessToken.value == "at-2")
        #expect(harness.tokenRequests.count == 2)
    }

    @Test func aTokenThatExpiresAtOnceServesTheRequestItCameWithAndIsRenewedBeforeTheNext() async throws {
        let harness = try ClientHarness()
        try await harness.seed(expiresIn: -10)
        let client = harness.client()
        harness.transport.enqueue(json: Fixture.tokenJSON(access: "at-due-1", refresh: "rt-2", expiresIn: 0), for: Fixture.tokenURL)
        harness.transport.enqueue(json: Fixture.tokenJSON(access: "at-due-2", refresh: "rt-3", expiresIn: 0), for: Fixture.tokenURL)
        harness.transport.enqueue(HTTPTransportResponse(status: 200), for: Fixture.apiURL)
        harness.transport.enqueue(HTTPTransportResponse(status: 200), for: Fixture.apiURL)

        _ = try await client.send(HTTPTransportRequest(url: Fixture.apiURL))
        _ = try await client.send(HTTPTransportRequest(url: Fixture.apiURL))

        #expect(harness.transport.requests(for: Fixture.apiURL).map(\.authorization) == ["Bearer at-due-1", "Bearer at-due-2"])
        #expect(harness.tokenRequests.count == 2, "one renewal per request")
    }

    @Test func expiryIsComputedFromWhenTheRequestWasSent() async throws {
        let harness = try ClientHarness()
        try await harness.seed(expiresIn: 3600)
        let sentAt = harness.clock.now()
        harness.transport.respond { _ in
            harness.clock.advance(by: .seconds(20))
            return HTTPTransportResponse(
                status: 200, headers: [.contentType: "application/json"], body: Data(Fixture.tokenJSON(expiresIn: 100).utf8))
        }
        let token = try await harness.client().refreshAccessToken()
        #expect(token.expiresAt == sentAt.addingTimeInterval(100))
    }

    @Test func thousandConcurrentSendsOnAnExpiredTokenMakeOneTokenRequest() async throws {
        let harness = try ClientHarness()
        try await harness.seed(expiresIn: -10)
        let tokenRequests = harness.serveSlowTokenEndpoint(access: "at-fresh", refresh: "rt-rotated")
        let client = harness.client()
        let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<1000 {
                group.addTask { try await client.send(HTTPTransportRequest(url: Fixture.apiURL)).status.code }
            }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(statuses.count == 1000)
        #expect(statuses.allSatisfy { $0 == 200 })
        #expect(tokenRequests() == 1)
    }

    @Test func refreshIsSingleFlightAcrossClientsOfOneAccount() async throws {
        let harness = try ClientHarness()
        try await harness.seed(expiresIn: -10)
        let tokenRequests = harness.serveSlowTokenEndpoint(access: "at-fresh", refresh: "rt-rotated")
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<50 {
                // A server making one client per incoming request.
                let client = harness.client()
                group.addTask { _ = try await client.send(HTTPTransportRequest(url: Fixture.apiURL)) }
            }
            try await group.waitForAll()
        }
        #expect(tokenRequests() == 1)
        let late = harness.client()
        _ = try await late.send(HTTPTransportRequest(url: Fixture.apiURL))
        #expect(tokenRequests() == 1)
    }

    @Test func clientWithAStaleTokenUsesTheOneAnotherClientStored() async throws {
        let harness = try ClientHarness()
        try await harness.seed(expiresIn: 3600)
        let first = harness.client()
        let second = harness.client()
        _ = try await second.token()
        harness.transport.enqueue(json: Fixture.tokenJSON(access: "at-rotated", refresh: "rt-rotated"), for: Fixture.tokenURL)
        _ = try await first.refreshAccessToken()
        // `second` still holds the old access token; its 401 must not spend the
        // rotated-away refresh token but pick up the stored one.
        harness.transport.enqueue(
            HTTPTransportResponse(status: 401, headers: [.wwwAuthenticate: "Bearer error=\"invalid_token\""]), for: Fixture.apiURL)
        harness.transport.enqueue(json: "{}", for: Fixture.apiURL)
        let response = try await second.send(HTTPTransportRequest(url: Fixture.apiURL))
        #expect(response.status == 200)
        #expect(harness.tokenRequests.count == 1)
        #expect(harness.transport.requests(for: Fixture.apiURL).last?.authorization == "Bearer at-rotated")
    }

    @Test func invalidGrantOnRefreshDeletesTheTokenAndReportsItLost() async throws {
        let harness = try ClientHarness()
        try await harness.seed(expiresIn: 3600)
        let delegate = RecordingDelegate()
        harness.transport.enqueue(
            json: "{\"error\":\"invalid_grant\",\"error_description\":\"revoked\"}", status: 400, for: Fixture.tokenURL)
        let client = harness.client(delegate: delegate)
        let error = await oauth2Error { _ = try await client.refreshAccessToken() }
        #expect(error?.code == .invalidGrant)
        #expect(error?.errorDescription == "revoked")
        #expect(try await harness.store.load(account: "alice") == nil)
        #expect(delegate.events == [.lostAccessToken(error)])
        #expect(client.currentToken == nil)
    }

    @Test func invalidGrantDuringASignedRequestAsksForReauthorization() async throws {
        let harness = try ClientHarness()
        try await harness.seed(expiresIn: -1)
        harness.transport.enqueue(json: "{\"error\":\"invalid_grant\"}", status: 400, for: Fixture.tokenURL)
        let error = await oauth2Error { _ = try await harness.client().send(HTTPTransportRequest(url: Fixture.apiURL)) }
        #expect(error?.code == .reauthorizationRequired)
        #expect(try await harness.store.load(account: "alice") == nil)
        #expect(harness.transport.requests(for: Fixture.apiURL).isEmpty)
    }

    @Test func serverErrorOnRefreshKeepsTheToken() async throws {
        let harness = try ClientHarness()
        try await harness.seed(expiresIn: 3600)
        let delegate = RecordingDelegate()
        harness.transport.enqueue(
            HTTPTransportResponse(status: 503, headers: [.contentType: "text/html"], body: Data("<html>down</html>".utf8)),
            for: Fixture.tokenURL)
        let client = harness.client(delegate: delegate)
        let error = await oauth2Error { _ = try await client.refreshAccessToken() }
        #expect(error?.code == .httpError)
        #expect(error?.httpStatus == 503)
        #expect(try await harness.store.load(account: "alice")?.accessToken.value == Fixture.accessToken)
        #expect(client.currentToken?.accessToken.value == Fixture.accessToken)
        #expect(delegate.events == [.failedToGetAccessToken(try #require(error))])
    }

    @Test func transportFailureOnRefreshKeepsTheToken() async throws {
        let harness = try ClientHarness()
        try await harness.seed(expiresIn: 3600)
        harness.transport.enqueue(error: HTTPTransportError.connectionLost, for: Fixture.tokenURL)
        let error = await oauth2Error { _ = try await harness.client().refreshAccessToken() }
        #expect(error?.code == .transportError)
        #expect(try await harness.store.load(account: "alice") != nil)
    }

    @Test func refreshWithoutARefreshTokenIsNotAuthenticated() async throws {
        let harness = try ClientHarness()
        try await harness.seed(refresh: nil, expiresIn: 3600)
        let error = await oauth2Error { _ = try await harness.client().refreshAccessToken() }
        #expect(error?.code == .notAuthenticated)
        #expect(harness.tokenRequests.isEmpty)
        #expect(try await harness.store.load(account: "alice") != nil)
    }

    @Test func rejectedTokenWithoutARefreshTokenIsLost() async throws {
        let harness = try ClientHarness()
        try await harness.seed(refresh: nil, expiresIn: 3600)
        harness.transport.enqueue(
            HTTPTransportResponse(status: 401, headers: [.wwwAuthenticate: "Bearer error=\"invalid_token\""]), for: Fixture.apiURL)
        let error = await oauth2Error { _ = try await harness.client().send(HTTPTransportRequest(url: Fixture.apiURL)) }
        #expect(error?.code == .invalidToken)
        #expect(try await harness.store.load(account: "alice") == nil)
    }
}
