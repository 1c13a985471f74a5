import Synchronization
import Foundation
import OAuth2
@testable import SignInServerCore
import Testing

/// The in-memory sessions: random ids, expiry, bounds, single use; no provider needed.
struct SessionStoreTests {
    /// A clock the test moves by hand.
    final class TestClock: Sendable {
        private let time = Mutex(Date(timeIntervalSince1970: 1_700_000_000))
        var now: Date { time.withLock { $0 } }
        func advance(by seconds: TimeInterval) { time.withLock { $0 += seconds } }
    }

    static let transport = CurlTransport()

    func pending() async throws -> PendingAuthorization {
        let configuration = try OAuth2Configuration(
            clientID: "client",
            authorizationEndpoint: try requireValue(URL(string: "https://provider.example/authorize"), "URL"),
            tokenEndpoint: try requireValue(URL(string: "https://provider.example/token"), "URL")
        )
        let client = try OAuth2Provider(configuration: configuration, transport: Self.transport).client()
        return try await client.authorizationURL(redirectURI: try requireValue(URL(string: "https://app.example/callback"), "URL"))
    }

    func store(_ clock: TestClock, capacity: Int = 100) -> InMemorySessionStore {
        InMemorySessionStore(capacity: capacity, now: { clock.now })
    }

    @Test func sessionIDsAreLongRandomAndCookieSafe() {
        let ids = (0..<100).map { _ in SessionID.make() }
        #expect(Set(ids).count == ids.count)
        for id in ids {
            #expect(id.count == 43)
            #expect(id.allSatisfy { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" })
        }
    }

    @Test func aPendingSignInIsKeptUnderTheSessionID() async throws {
        let sessions = store(TestClock())
        let pending = try await pending()
        let id = sessions.startSignIn(pending, session: nil)
        #expect(sessions.pendingSignIn(of: id) == pending)
        #expect(sessions.pendingSignIn(of: "another id") == nil)
    }

    @Test func aPendingSignInExpiresAfterTenMinutes() async throws {
        let clock = TestClock()
        let sessions = store(clock)
        let id = sessions.startSignIn(try await pending(), session: nil)

        clock.advance(by: 599)
        #expect(sessions.pendingSignIn(of: id) != nil)
        clock.advance(by: 2)
        #expect(sessions.pendingSignIn(of: id) == nil)
        #expect(sessions.count == 0)
    }

    @Test func startingASignInReusesALiveSessionAndReplacesAnUnknownOne() async throws {
        let sessions = store(TestClock())
        let first = sessions.startSignIn(try await pending(), session: nil)
        #expect(sessions.startSignIn(try await pending(), session: first) == first)
        let planted = sessions.startSignIn(try await pending(), session: "chosen-by-an-attacker")
        #expect(planted != "chosen-by-an-attacker")
    }

    @Test func completingASignInMovesTheAccountToANewID() async throws {
        let sessions = store(TestClock())
        let old = sessions.startSignIn(try await pending(), session: nil)
        let new = sessions.completeSignIn(session: old, account: "user:alice")

        #expect(new != old)
        #expect(sessions.account(of: new) == "user:alice")
        #expect(sessions.account(of: old) == nil)
        #expect(sessions.pendingSignIn(of: new) == nil)
    }

    @Test func anIdleSignedInSessionExpires() {
        let clock = TestClock()
        let sessions = store(clock)
        let id = sessions.completeSignIn(session: nil, account: "user:alice")

        clock.advance(by: 11 * 3600)
        #expect(sessions.account(of: id) == "user:alice")
        clock.advance(by: 11 * 3600)
        #expect(sessions.account(of: id) == "user:alice", "each use restarts the idle time")
        clock.advance(by: 12 * 3600 + 1)
        #expect(sessions.account(of: id) == nil)
    }

    @Test func pastTheAnonymousBudgetTheOldestAnonymousSessionIsDropped() async throws {
        let clock = TestClock()
        let sessions = store(clock, capacity: 3)
        let dropped = sessions.startSignIn(try await pending(), session: nil)
        var kept: [String] = []
        for _ in 0..<3 { kept.append(sessions.startSignIn(try await pending(), session: nil)) }

        #expect(sessions.count == 3)
        #expect(sessions.pendingSignIn(of: dropped) == nil)
        for id in kept { #expect(sessions.pendingSignIn(of: id) != nil) }
    }

    /// The audit's flood: anonymous `/login` requests in a loop.
    @Test func aFloodOfAnonymousSignInsNeverPushesASignedInUserOut() async throws {
        let clock = TestClock()
        let sessions = store(clock, capacity: 3)
        let alice = sessions.completeSignIn(session: nil, account: "user:alice")
        let bob = sessions.completeSignIn(session: nil, account: "user:bob")
        for _ in 0..<1_000 {
            clock.advance(by: 1)
            _ = sessions.startSignIn(try await pending(), session: nil)
        }

        #expect(sessions.account(of: alice) == "user:alice")
        #expect(sessions.account(of: bob) == "user:bob")
        #expect(sessions.count <= 2 + 3)
    }

    @Test func pastBothBudgetsASignInDropsAnAnonymousSessionFirstThenTheLeastRecentlyUsed() async throws {
        let clock = TestClock()
        let sessions = store(clock, capacity: 2)
        var anonymous: [String] = []
        for _ in 0..<2 { anonymous.append(sessions.startSignIn(try await pending(), session: nil)) }
        clock.advance(by: 1)
        let oldest = sessions.completeSignIn(session: nil, account: "user:a")
        clock.advance(by: 1)
        let middle = sessions.completeSignIn(session: nil, account: "user:b")
        clock.advance(by: 1)
        let third = sessions.completeSignIn(session: nil, account: "user:c")

        #expect(sessions.count == 4)
        #expect(sessions.pendingSignIn(of: anonymous[0]) == nil)
        #expect(sessions.account(of: oldest) == "user:a")
        clock.advance(by: 1)
        _ = sessions.completeSignIn(session: nil, account: "user:d")
        _ = sessions.completeSignIn(session: nil, account: "user:e")
        #expect(sessions.count == 4)
        #expect(sessions.account(of: middle) == nil, "the least recently used signed-in session went")
        #expect(sessions.account(of: third) == "user:c")
    }

    @Test func endingAllSessionsComparesAccountsByTheirExactBytes() {
        let sessions = store(TestClock())
        let composed = sessions.completeSignIn(session: nil, account: "user:Jos\u{E9}")
        let decomposed = sessions.completeSignIn(session: nil, account: "user:Jose\u{301}")
        #expect("user:Jos\u{E9}" == "user:Jose\u{301}") // one name to String's ==, two accounts to the token store

        sessions.endAll(account: "user:Jos\u{E9}")
        #expect(sessions.account(of: composed) == nil)
        #expect(sessions.account(of: decomposed) == "user:Jose\u{301}")
    }

    @Test func endingAllSessionsOfAnAccountLeavesOtherAccountsAlone() {
        let sessions = store(TestClock())
        let laptop = sessions.completeSignIn(session: nil, account: "user:alice")
        let phone = sessions.completeSignIn(session: nil, account: "user:alice")
        let bob = sessions.completeSignIn(session: nil, account: "user:bob")

        sessions.endAll(account: "user:alice")
        #expect(sessions.account(of: laptop) == nil)
        #expect(sessions.account(of: phone) == nil)
        #expect(sessions.account(of: bob) == "user:bob")
    }

    @Test func forgettingTheAccountKeepsAPendingSignIn() async throws {
        let sessions = store(TestClock())
        let id = sessions.completeSignIn(session: nil, account: "user:alice")
        _ = sessions.startSignIn(try await pending(), session: id)

        sessions.forgetAccount(of: id)
        #expect(sessions.account(of: id) == nil)
        #expect(sessions.pendingSignIn(of: id) != nil)
    }

    @Test func aPendingSignInIsTakenOnceAndOnlyWithItsState() async throws {
        let sessions = store(TestClock())
        let pending = try await pending()
        let id = sessions.startSignIn(pending, session: nil)

        #expect(sessions.takePendingSignIn(of: id, state: "forged") == nil)
        #expect(sessions.pendingSignIn(of: id) == pending, "a wrong state takes nothing")
        #expect(sessions.takePendingSignIn(of: id, state: pending.state) == pending)
        #expect(sessions.takePendingSignIn(of: id, state: pending.state) == nil)
        #expect(sessions.takePendingSignIn(of: nil, state: pending.state) == nil)
    }
}
