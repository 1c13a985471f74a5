import Foundation
import OAuth2
import PostgresNIO
@testable import SignInServerCore
import Testing

/// The PostgreSQL sessions on their own, against the test database: expiry
/// by a clock the test moves, single use of a pending sign-in across two
/// stores with pools of their own (two instances), and rows that hold no
/// usable id. No provider needed.
@Suite(.enabled(if: TestDatabase.isConfigured, TestDatabase.disabledReason))
struct PostgresSessionStoreTests {
    typealias TestClock = SessionStoreTests.TestClock

    func pending() async throws -> PendingAuthorization {
        try await SessionStoreTests().pending()
    }

    /// Runs `body` with a store on a new table, its own running client, and `clock`.
    func withStore<T: Sendable>(
        table: String = TestDatabase().sessionTable,
        clock: TestClock = TestClock(),
        _ body: (PostgresSessionStore) async throws -> T
    ) async throws -> T {
        try await TestDatabase.withClient { client in
            try await body(try PostgresSessionStore(client: client, table: table, now: { clock.now }))
        }
    }

    @Test func aPendingSignInIsServedForTenMinutesThenDeleted() async throws {
        let clock = TestClock()
        try await withStore(clock: clock) { sessions in
            let pending = try await pending()
            let id = try await sessions.startSignIn(pending, session: nil)
            #expect(try await sessions.pendingSignIn(of: id) == pending)
            #expect(try await sessions.pendingSignIn(of: "another id") == nil)

            clock.advance(by: 599)
            #expect(try await sessions.pendingSignIn(of: id) == pending)
            clock.advance(by: 2)
            #expect(try await sessions.pendingSignIn(of: id) == nil)
            #expect(try await sessions.takePendingSignIn(of: id, state: pending.state) == nil)
            #expect(try await sessions.startSignIn(try await self.pending(), session: id) != id, "an expired session is not revived")

            clock.advance(by: 601)
            #expect(try await sessions.purgeExpired() == 1)
            #expect(try await sessions.rowCount() == 0)
        }
    }

    @Test func anIdleSessionExpiresAndEachUseRestartsItsTime() async throws {
        let clock = TestClock()
        try await withStore(clock: clock) { sessions in
            let id = try await sessions.completeSignIn(session: nil, account: "user:alice")
            clock.advance(by: 11 * 3600)
            #expect(try await sessions.account(of: id) == "user:alice")
            clock.advance(by: 11 * 3600)
            #expect(try await sessions.account(of: id) == "user:alice")
            clock.advance(by: 12 * 3600 + 1)
            #expect(try await sessions.account(of: id) == nil)
            #expect(try await sessions.purgeExpired() == 1)
        }
    }

    @Test func aPendingSignInIsTakenOnceAcrossTwoInstancesRacing() async throws {
        let table = TestDatabase().sessionTable
        let clock = TestClock()
        try await withStore(table: table, clock: clock) { a in
            try await withStore(table: table, clock: clock) { b in
                for _ in 0..<10 {
                    let pending = try await pending()
                    let id = try await a.startSignIn(pending, session: nil)
                    #expect(try await b.takePendingSignIn(of: id, state: "forged") == nil)

                    async let fromA = a.takePendingSignIn(of: id, state: pending.state)
                    async let fromB = b.takePendingSignIn(of: id, state: pending.state)
                    let taken = try await [fromA, fromB].compactMap { $0 }
                    #expect(taken == [pending], "exactly one instance takes it")
                    #expect(try await a.takePendingSignIn(of: id, state: pending.state) == nil)
                }
            }
        }
    }

    @Test func signingInMovesTheAccountToANewIDThatEveryInstanceKnows() async throws {
        let table = TestDatabase().sessionTable
        try await withStore(table: table) { a in
            try await withStore(table: table) { b in
                let old = try await a.startSignIn(try await pending(), session: nil)
                #expect(try await b.startSignIn(try await pending(), session: old) == old, "a live session keeps its id")
                #expect(try await b.startSignIn(try await pending(), session: "chosen-by-an-attacker") != "chosen-by-an-attacker")

                let new = try await b.completeSignIn(session: old, account: "user:alice")
                #expect(new != old)
                #expect(try await a.account(of: new) == "user:alice")
                #expect(try await a.account(of: old) == nil)
                #expect(try await a.pendingSignIn(of: new) == nil)
            }
        }
    }

    @Test func endingAnAccountsSessionsOnOneInstanceEndsThemOnTheOther() async throws {
        let table = TestDatabase().sessionTable
        try await withStore(table: table) { a in
            try await withStore(table: table) { b in
                let laptop = try await a.completeSignIn(session: nil, account: "user:alice")
                let phone = try await b.completeSignIn(session: nil, account: "user:alice")
                let bob = try await a.completeSignIn(session: nil, account: "user:bob")

                try await b.endAll(account: "user:alice")
                #expect(try await a.account(of: laptop) == nil)
                #expect(try await a.account(of: phone) == nil)
                #expect(try await a.account(of: bob) == "user:bob")
                try await b.end(bob)
                #expect(try await a.account(of: bob) == nil)
            }
        }
    }

    @Test func forgettingTheAccountKeepsAPendingSignIn() async throws {
        try await withStore { sessions in
            let id = try await sessions.completeSignIn(session: nil, account: "user:alice")
            _ = try await sessions.startSignIn(try await pending(), session: id)
            try await sessions.forgetAccount(of: id)
            #expect(try await sessions.account(of: id) == nil)
            #expect(try await sessions.pendingSignIn(of: id) != nil)

            let other = try await sessions.completeSignIn(session: nil, account: "user:bob")
            try await sessions.forgetAccount(of: other)
            #expect(try await sessions.rowCount() == 1, "a session left with nothing is deleted")
        }
    }

    @Test func theRowsHoldThePendingSignInButNotTheSessionID() async throws {
        let table = TestDatabase().sessionTable
        try await TestDatabase.withClient { client in
            let sessions = try PostgresSessionStore(client: client, table: table)
            let pending = try await pending()
            let id = try await sessions.startSignIn(pending, session: nil)

            var dump = ""
            let rows = try await client.query("SELECT row_to_json(s)::text FROM \(unescaped: "\"\(table)\"") AS s")
            for try await (row) in rows.decode(String.self) {
                dump += row
            }
            #expect(!dump.isEmpty)
            #expect(!dump.contains(id))
            #expect(dump.contains(pending.redirectURI.absoluteString), "the pending sign-in is there, as JSON")
        }
    }

    @Test func anUnreachableDatabaseIsAnErrorThatNamesNoSecret() async throws {
        // A client that is never run: no connection comes, the call gives up.
        let client = PostgresClient(
            configuration: .init(host: "127.0.0.1", port: 1, username: "nobody", password: nil, database: "none", tls: .disable))
        let sessions = try PostgresSessionStore(client: client, operationTimeout: .milliseconds(300))
        let id = SessionID.make()
        let error = await #expect(throws: SessionStoreError.self) {
            try await sessions.account(of: id)
        }
        #expect(error?.description.hasPrefix("could not read a session in PostgreSQL") == true)
        #expect(error?.description.contains(id) == false)
    }
}
