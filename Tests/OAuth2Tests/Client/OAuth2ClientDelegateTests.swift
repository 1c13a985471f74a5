import Foundation
import OAuth2
import OAuth2Testing
import Testing

@Suite struct OAuth2ClientDelegateTests {
    @Test func aTokenWithNothingStoredAsksForAuthentication() async throws {
        let harness = try ClientHarness()
        let delegate = RecordingDelegate()

        let error = await oauth2Error { _ = try await harness.client(delegate: delegate).token() }

        #expect(error?.code == .notAuthenticated)
        #expect(delegate.events == [.needsAuthentication])
    }

    @Test func aTokenWithAValidOneStoredTellsNobody() async throws {
        let harness = try ClientHarness()
        try await harness.seed(expiresIn: 3600)
        let delegate = RecordingDelegate()

        let token = try await harness.client(delegate: delegate).token()

        #expect(token.accessToken.value == Fixture.accessToken)
        #expect(delegate.events.isEmpty)
        #expect(harness.transport.requests.isEmpty)
    }

    @Test func aTokenWithAnExpiredOneStoredRefreshesAndSaysSo() async throws {
        let harness = try ClientHarness()
        try await harness.seed(expiresIn: -60)
        harness.transport.enqueue(json: Fixture.tokenJSON(access: "at-fresh"), for: Fixture.tokenURL)
        let delegate = RecordingDelegate()

        let token = try await harness.client(delegate: delegate).token()

        #expect(token.accessToken.value == "at-fresh")
        #expect(delegate.events == [.refreshedAccessToken(token)])
    }

    @Test func delegateMayStartAFlowFromNeedsAuthentication() async throws {
        let harness = try ClientHarness()
        let started = LockedValue<Task<PendingAuthorization, any Error>?>(nil)
        let delegate = RecordingDelegate { client in
            // NXOAuth2Client's documented pattern: re-enter the client (in a
            // task, as starting a flow may push the request to the provider).
            started.withLock { $0 = Task { try await client.authorizationURL(redirectURI: Fixture.redirectURI) } }
            _ = client.currentToken
        }
        let client = harness.client(delegate: delegate)
        let error = await oauth2Error { _ = try await client.token() }
        #expect(error?.code == .notAuthenticated)
        let pending = try await #require(started.withLock { $0 }).value
        harness.transport.enqueue(json: Fixture.tokenJSON(), for: Fixture.tokenURL)
        try await client.authenticate(.authorizationCode(redirect: "\(Fixture.redirectURI.absoluteString)?code=c&state=\(pending.state)"))
        #expect(delegate.events.count == 2)
        #expect(delegate.events.last.map { if case .gotAccessToken = $0 { true } else { false } } == true)
    }

    @Test func delegateMaySendFromAnEvent() async throws {
        let harness = try ClientHarness()
        harness.transport.enqueue(json: Fixture.tokenJSON(), for: Fixture.tokenURL)
        harness.transport.enqueue(json: "{}", for: Fixture.apiURL)
        final class Sender: OAuth2ClientDelegate, Sendable {
            let done = LockedValue<Task<Int, any Error>?>(nil)
            func oauth2ClientNeedsAuthentication(_ client: OAuth2Client) {}
            func oauth2Client(_ client: OAuth2Client, didGetAccessToken token: AccessToken) {
                done.withLock { $0 = Task { try await client.send(HTTPTransportRequest(url: Fixture.apiURL)).status.code } }
            }
        }
        let delegate = Sender()
        let client = harness.client(delegate: delegate)
        try await client.authenticate(.clientCredentials)
        let task = try #require(delegate.done.withLock { $0 })
        #expect(try await task.value == 200)
    }

    @Test func eventStreamSeesWhatTheDelegateSees() async throws {
        let harness = try ClientHarness()
        try await harness.seed(expiresIn: 3600)
        let client = harness.client()
        var iterator = client.events.makeAsyncIterator()
        harness.transport.enqueue(json: Fixture.tokenJSON(access: "at-2"), for: Fixture.tokenURL)
        let refreshed = try await client.refreshAccessToken()
        try await client.logout()
        #expect(await iterator.next() == .refreshedAccessToken(refreshed))
        #expect(await iterator.next() == .lostAccessToken(nil))
    }
}
