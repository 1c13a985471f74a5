import Foundation
@testable import OAuth2
import OAuth2Testing
import Testing

/// Task cancellation landing at random points of a refresh, a code exchange
/// and device polling, many rounds each from a fixed seed. Each round checks
/// what must hold wherever the cancellation fell; a continuation resumed
/// twice (the transport's, the clock's, the lock's) would trap, so running
/// the rounds is itself a check, under ThreadSanitizer too (`make test-tsan`).
@Suite(.timeLimit(.minutes(3))) struct OAuth2ClientCancellationTests {
    static let rounds = 150

    /// Every waiter of a refresh in flight is cancelled at a random moment,
    /// the provider answering at a random moment among the cancellations:
    /// the refresh completes and is saved, once; each waiter ends with the
    /// new token or `cancelled`; the next caller gets the token without a
    /// second token request.
    @Test func aRefreshWhoseWaitersAreAllCancelledCompletesAndIsSavedOnce() async throws {
        var random = SeededRandom(seed: 0xCA11_0001)
        for round in 0..<Self.rounds {
            let harness = try ClientHarness()
            try await harness.seed(expiresIn: -10)
            let fresh = "at-fresh-\(round)"
            let answer = Gate()
            let tokenRequests = LockedValue(0)
            harness.transport.respond { _ in
                tokenRequests.withLock { $0 += 1 }
                await answer.wait()
                return HTTPTransportResponse(
                    status: 200,
                    headers: [.contentType: "application/json"],
                    body: Data(Fixture.tokenJSON(access: fresh, refresh: "rt-rotated-\(round)").utf8)
                )
            }
            // Half share one client, half have one each (a server's client per request).
            let shared = harness.client()
            let waiters = (0..<16).map { index in
                let client = index.isMultiple(of: 2) ? shared : harness.client()
                return Task { try await client.token() }
            }
            let answerAt = Int.random(in: 0...waiters.count, using: &random)
            for (index, waiter) in waiters.shuffled(using: &random).enumerated() {
                if index == answerAt { answer.open() }
                await yield(Int.random(in: 0...4, using: &random))
                waiter.cancel()
            }
            answer.open()

            for waiter in waiters {
                switch await waiter.result {
                case .success(let token):
                    #expect(token.accessToken.value == fresh, "round \(round)")
                case .failure(let error):
                    #expect((error as? OAuth2Error)?.code == .cancelled, "round \(round): \(error)")
                }
            }
            // Saved even if no waiter was left to see it.
            try await eventually("round \(round): the refreshed token is saved") {
                try await harness.store.load(account: "alice")?.accessToken.value == fresh
                    && harness.provider.refreshCoordinator.inFlightCount == 0
            }
            #expect(try await harness.client().token().accessToken.value == fresh)
            #expect(try await shared.token().accessToken.value == fresh)
            #expect(tokenRequests.withLock { $0 } == 1, "round \(round)")
            #expect(harness.store.saveCount == 2, "round \(round): the seed and the refresh")
        }
    }

    /// A code exchange cancelled at a random point, sometimes while another
    /// holder keeps the account's lock: it ends with the token (saved, held,
    /// announced) or with `cancelled` (nothing sent, nothing stored, the
    /// previous token kept). Either way the redirect has been used: it cannot
    /// be replayed, no flow is left pending, and a new flow works.
    @Test func aCodeExchangeCancelledAtRandomEndsWithTheTokenOrCancelledAndNothingHalfDone() async throws {
        var random = SeededRandom(seed: 0xCA11_0002)
        var outcomes = (tokens: 0, cancelled: 0)
        for round in 0..<Self.rounds {
            let harness = try ClientHarness()
            let hadToken = round.isMultiple(of: 2)
            if hadToken { try await harness.seed(access: "at-previous", expiresIn: 3600) }
            let previous = try await harness.store.load(account: "alice")
            let delegate = RecordingDelegate()
            let client = harness.client(delegate: delegate)
            let pending = try await client.authorizationURL(redirectURI: Fixture.redirectURI)
            let providerYields = Int.random(in: 0...4, using: &random)
            harness.transport.respond { _ in
                await yield(providerYields)
                return HTTPTransportResponse(
                    status: 200, headers: [.contentType: "application/json"], body: Data(Fixture.tokenJSON(access: "at-exchanged").utf8))
            }
            let release = Gate()
            let holder = Int.random(in: 0..<3, using: &random) == 0 ? try await holdLock(harness.store, until: release) : nil

            let exchange = Task { try await client.authenticate(.authorizationCode(redirect: redirect(pending))) }
            let cancelAfter = Int.random(in: 0...12, using: &random)
            let releaseAfter = Int.random(in: 0...12, using: &random)
            for step in 0...max(cancelAfter, releaseAfter) {
                if step == cancelAfter { exchange.cancel() }
                if step == releaseAfter { release.open() }
                await Task.yield()
            }
            let result = await exchange.result
            try await holder?.value

            switch result {
            case .success(let token):
                outcomes.tokens += 1
                #expect(token.accessToken.value == "at-exchanged")
                #expect(try await harness.store.load(account: "alice") == token)
                #expect(client.currentToken == token)
                #expect(delegate.events == [.gotAccessToken(token)])
                #expect(harness.tokenRequests.count == 1)
            case .failure(let error):
                outcomes.cancelled += 1
                let error = try #require(error as? OAuth2Error)
                #expect(error.code == .cancelled, "round \(round): \(error)")
                #expect(delegate.events == [.failedToGetAccessToken(error)])
                #expect(harness.tokenRequests.isEmpty, "round \(round): the code was sent though the exchange was cancelled")
                #expect(try await harness.store.load(account: "alice") == previous)
                if hadToken {
                    #expect(try await client.token() == previous)
                }
            }
            #expect(client.machine.withLock { $0.pendingAuthorization } == nil)
            let replay = await oauth2Error { try await client.authenticate(.authorizationCode(redirect: redirect(pending))) }
            #expect(replay?.code == .stateMismatch)
            let handedBack = await oauth2Error {
                try await client.authenticate(.authorizationCode(redirect: redirect(pending), pending: pending))
            }
            #expect(handedBack?.code == .stateMismatch)

            let next = try await client.authorizationURL(redirectURI: Fixture.redirectURI)
            harness.transport.enqueue(json: Fixture.tokenJSON(access: "at-next"), for: Fixture.tokenURL)
            let token = try await client.authenticate(.authorizationCode(redirect: redirect(next)))
            #expect(try await harness.store.load(account: "alice") == token)
        }
        // The seed spreads the cancellations over both outcomes.
        #expect(outcomes.tokens > 0 && outcomes.cancelled > 0, "\(outcomes)")
    }

    /// Device polling cancelled at a random point: while asleep between
    /// polls, as a poll starts, during one, or as it goes back to sleep. It
    /// ends with `cancelled` without the clock moving again, and polls no more.
    @Test func devicePollingCancelledAtRandomEndsCancelledAndPollsNoMore() async throws {
        var random = SeededRandom(seed: 0xCA11_0003)
        let deviceURL = try #require(URL(string: "https://idp.example/oauth/device"))
        for round in 0..<Self.rounds {
            var configuration = try Fixture.configuration()
            configuration.deviceAuthorizationEndpoint = deviceURL
            let harness = try ClientHarness(configuration: configuration)
            let clock = harness.clock
            let delegate = RecordingDelegate()
            let client = harness.client(delegate: delegate)
            harness.transport.enqueue(
                json:
                    #"{"device_code":"dc-1234567890","user_code":"WDJB-MJHT","verification_uri":"https://idp.example/device","expires_in":600,"interval":5}"#,
                for: deviceURL
            )
            let providerYields = Int.random(in: 0...3, using: &random)
            harness.transport.respond { _ in
                await yield(providerYields)
                return HTTPTransportResponse(
                    status: 400, headers: [.contentType: "application/json"], body: Data(#"{"error":"authorization_pending"}"#.utf8))
            }
            let authorization = try await client.startDeviceAuthorization()
            let polling = Task { try await client.authenticate(.deviceCode(authorization)) }

            let polls = Int.random(in: 0...3, using: &random)
            for _ in 0..<polls {
                try await clock.waitForSleepers()
                clock.advance(by: .seconds(5))
            }
            try await clock.waitForSleepers()
            if Bool.random(using: &random) {
                // Let the next poll start, and cancel somewhere around it.
                clock.advance(by: .seconds(5))
                await yield(Int.random(in: 0...6, using: &random))
            }
            polling.cancel()
            let requestsAtCancel = harness.tokenRequests.count

            // The clock does not move: only the cancellation can end it.
            let error = await oauth2Error { _ = try await polling.value }
            #expect(error?.code == .cancelled, "round \(round)")
            #expect(delegate.events.last == error.map(OAuth2Event.failedToGetAccessToken))
            let requestsAtEnd = harness.tokenRequests.count
            #expect(requestsAtEnd - requestsAtCancel <= 1, "round \(round): a poll in flight at the cancellation, no more")
            #expect(clock.sleeperCount == 0)
            clock.advance(by: .seconds(3600))
            await yield(10)
            #expect(harness.tokenRequests.count == requestsAtEnd, "round \(round): polled after the end")
            #expect(try await harness.store.load(account: "alice") == nil)
        }
    }

    func redirect(_ pending: PendingAuthorization) -> String {
        "\(pending.redirectURI.absoluteString)?code=code-abc&state=\(pending.state)"
    }

    /// Takes the account's lock in a task of its own and returns once it holds it; it lets go when `release` opens.
    func holdLock(_ store: some TokenStore, until release: Gate) async throws -> Task<Void, any Error> {
        let held = Gate()
        let holder = Task {
            try await store.withLock(account: "alice", timeout: .seconds(30)) {
                held.open()
                await release.wait()
            }
        }
        await held.wait()
        return holder
    }
}

/// Holds its waiters until opened; open for good once opened. Waiting is not
/// cancellable: it stands for a provider that answers when it answers.
final class Gate: Sendable {
    private let state = LockedValue((open: false, waiters: [CheckedContinuation<Void, Never>]()))

    func wait() async {
        await withCheckedContinuation { continuation in
            let isOpen = state.withLock { state in
                if !state.open { state.waiters.append(continuation) }
                return state.open
            }
            if isOpen { continuation.resume() }
        }
    }

    func open() {
        let waiters = state.withLock { state in
            state.open = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }
}

/// SplitMix64: a seeded generator, so that a failing round replays from its seed.
struct SeededRandom: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) {
        state = seed
    }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var mixed = state
        mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
        mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
        return mixed ^ (mixed >> 31)
    }
}

/// Lets other tasks run, `count` times.
func yield(_ count: Int) async {
    for _ in 0..<count { await Task.yield() }
}

/// Waits until `condition` holds, checking every millisecond; records an issue after 10 s.
func eventually(_ what: String, sourceLocation: SourceLocation = #_sourceLocation, _ condition: () async throws -> Bool) async throws {
    let deadline = ContinuousClock.now + .seconds(10)
    while try await !condition() {
        guard ContinuousClock.now < deadline else {
            Issue.record("not within 10 s: \(what)", sourceLocation: sourceLocation)
            return
        }
        try await Task.sleep(for: .milliseconds(1))
    }
}
