import Foundation
import OAuth2
import OAuth2Testing
import Testing

/// The store's account lock: a refresh waits for another holder (another
/// process, in production) and uses what it stored.
@Suite struct OAuth2ClientLockTests {
    @Test func aRefreshWaitsForTheLockAndUsesTheTokenItsHolderStored() async throws {
        let harness = try ClientHarness()
        try await harness.seed(expiresIn: -10)
        let holder = try await AccountLockHolder.hold(harness.store, account: "alice")
        harness.transport.enqueue(HTTPTransportResponse(status: 200), for: Fixture.apiURL)
        let client = harness.client()
        let sending = Task { try await client.send(HTTPTransportRequest(url: Fixture.apiURL)) }

        // The other holder refreshed meanwhile and stored its token.
        try await Task.sleep(for: .milliseconds(100))
        #expect(harness.transport.requests.isEmpty)
        var fresh = Fixture.token(access: "at-other", refresh: "rt-other", expiresAt: harness.clock.now().addingTimeInterval(3600))
        fresh.binding = harness.provider.configuration.binding
        try await holder.release(storing: fresh)

        #expect(try await sending.value.status == 200)
        #expect(harness.tokenRequests.isEmpty)
        #expect(harness.transport.requests(for: Fixture.apiURL).first?.authorization == "Bearer at-other")
    }

    @Test func aWaiterUsesATokenStoredMeanwhileEvenInsideTheExpirySkew() async throws {
        let harness = try ClientHarness()
        try await harness.seed(expiresIn: -10)
        let holder = try await AccountLockHolder.hold(harness.store, account: "alice")
        let client = harness.client()
        let waiting = Task { try await client.token() }

        try await Task.sleep(for: .milliseconds(100))
        // Shorter-lived than the 60-second skew, as a 2-second test token is.
        var fresh = Fixture.token(access: "at-short", refresh: "rt-short", expiresAt: harness.clock.now().addingTimeInterval(30))
        fresh.binding = harness.provider.configuration.binding
        try await holder.release(storing: fresh)

        #expect(try await waiting.value.accessToken.value == "at-short")
        #expect(harness.tokenRequests.isEmpty)
    }

    @Test func aTokenDeletedWhileWaitingForTheLockIsReauthorizationRequired() async throws {
        let harness = try ClientHarness()
        try await harness.seed(expiresIn: -10)
        let client = harness.client()
        let holder = try await AccountLockHolder.hold(harness.store, account: "alice")
        let sending = Task { try await client.send(HTTPTransportRequest(url: Fixture.apiURL)) }

        try await Task.sleep(for: .milliseconds(100))
        try await holder.releaseDeleting()

        let error = await oauth2Error { _ = try await sending.value }
        #expect(error?.code == .reauthorizationRequired)
        #expect(harness.tokenRequests.isEmpty)
    }

    @Test func aLockHeldPastTheRequestTimeoutIsLockTimeoutAndTheTokenIsKept() async throws {
        var configuration = try Fixture.configuration()
        configuration.requestTimeout = .milliseconds(200)
        let harness = try ClientHarness(configuration: configuration)
        try await harness.seed(expiresIn: -10)
        let holder = try await AccountLockHolder.hold(harness.store, account: "alice")

        let error = await oauth2Error { _ = try await harness.client().refreshAccessToken() }
        try await holder.release()

        #expect(error?.code == .lockTimeout)
        #expect(error?.message.contains("account \"alice\"") == true)
        #expect(harness.tokenRequests.isEmpty)
        #expect(try await harness.store.load(account: "alice")?.refreshToken?.value == Fixture.refreshToken)
    }

    @Test func accountsThatDifferOnlyInUnicodeCompositionRefreshSeparately() async throws {
        let composed = "Jos\u{E9}"
        let decomposed = "Jose\u{301}"
        #expect(composed == decomposed) // String's ==: one account to it, two to every store.
        let harness = try ClientHarness()
        try await harness.seed(composed, access: "at-composed", refresh: "rt-composed", expiresIn: -10)
        try await harness.seed(decomposed, access: "at-decomposed", refresh: "rt-decomposed", expiresIn: -10)
        harness.transport.respond { request in
            let refreshToken = Fixture.formFields(request.body)["refresh_token"] ?? "?"
            try await Task.sleep(for: .milliseconds(50))
            return HTTPTransportResponse(
                status: 200, headers: [.contentType: "application/json"],
                body: Data(Fixture.tokenJSON(access: "new-\(refreshToken)", refresh: "next-\(refreshToken)").utf8))
        }

        async let first = harness.client(composed).token()
        async let second = harness.client(decomposed).token()
        let (composedToken, decomposedToken) = try await (first, second)

        #expect(composedToken.accessToken.value == "new-rt-composed")
        #expect(decomposedToken.accessToken.value == "new-rt-decomposed")
        #expect(harness.tokenRequests.count == 2)
        #expect(try await harness.store.load(account: composed)?.accessToken.value == "new-rt-composed")
        #expect(try await harness.store.load(account: decomposed)?.accessToken.value == "new-rt-decomposed")
    }

    @Test func invalidGrantWithANewTokenStoredMeanwhileUsesItAndDeletesNothing() async throws {
        let harness = try ClientHarness()
        try await harness.seed(expiresIn: -10)
        var other = Fixture.token(access: "at-other", refresh: "rt-other", expiresAt: harness.clock.now().addingTimeInterval(3600))
        other.binding = harness.provider.configuration.binding
        let store = harness.store
        harness.transport.respond { [other] _ in
            // A process that does not take the lock (an older version) refreshed first.
            try await store.save(other, account: "alice")
            return HTTPTransportResponse(
                status: 400, headers: [.contentType: "application/json"], body: Data(#"{"error":"invalid_grant"}"#.utf8))
        }
        let delegate = RecordingDelegate()

        let token = try await harness.client(delegate: delegate).refreshAccessToken()

        #expect(token.accessToken.value == "at-other")
        #expect(try await harness.store.load(account: "alice")?.accessToken.value == "at-other")
        #expect(!delegate.events.contains { if case .lostAccessToken = $0 { true } else { false } })
    }

    @Test func invalidGrantWithNothingNewStoredDeletesTheToken() async throws {
        let harness = try ClientHarness()
        try await harness.seed(expiresIn: -10)
        harness.transport.enqueue(json: #"{"error":"invalid_grant"}"#, status: 400, for: Fixture.tokenURL)

        let error = await oauth2Error { _ = try await harness.client().send(HTTPTransportRequest(url: Fixture.apiURL)) }

        #expect(error?.code == .reauthorizationRequired)
        #expect(try await harness.store.load(account: "alice") == nil)
    }
}
