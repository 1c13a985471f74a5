import Foundation
import OAuth2
import OAuth2Postgres
import OAuth2Testing
import PostgresNIO
import Synchronization
import Testing

/// The account lock across PostgreSQL clients (each its own pool, as two app
/// instances have), and the client refreshing once on it.
@Suite(
    .enabled(
        if: TestDatabase.isConfigured, "needs PostgreSQL: `make test` starts one (scripts/postgres.sh) and sets OAUTH2_IT_POSTGRES_URL"))
struct PostgresLockTests {
    @Test func theLockExcludesAnotherInstanceUntilTheHolderReleases() async throws {
        let table = TestDatabase.uniqueTable()
        try await TestDatabase.withClient { first in
            try await TestDatabase.withClient { second in
                let holderStore = try TestDatabase.store(first, table: table)
                let waiterStore = try TestDatabase.store(second, table: table)
                let holder = try await AccountLockHolder.hold(holderStore, account: "alice")

                let error = try await #require(throws: OAuth2Error.self) {
                    try await waiterStore.withLock(account: "alice", timeout: .milliseconds(300)) {}
                }
                #expect(error.code == .lockTimeout)
                // Another account is not held up.
                #expect(try await waiterStore.withLock(account: "bob", timeout: .seconds(5)) { true })

                try await holder.release(storing: TestDatabase.token(7))
                // The next holder reads what the previous one saved under the lock.
                let seen = try await waiterStore.withLock(account: "alice", timeout: .seconds(10)) { () async throws(OAuth2Error) in
                    try await waiterStore.load(account: "alice")?.accessToken
                }
                #expect(seen == TestDatabase.token(7).accessToken)
            }
        }
    }

    @Test func aHolderUsesItsOwnConnectionSoAPoolOfOneDoesNotDeadlock() async throws {
        try await TestDatabase.withClient(maximumConnections: 1) { client in
            let store = try TestDatabase.store(client, table: TestDatabase.uniqueTable())
            let loaded = try await store.withLock(account: "alice", timeout: .seconds(10)) { () async throws(OAuth2Error) in
                try await store.save(TestDatabase.token(1), account: "alice")
                try await store.delete(account: "bob")
                return try await store.load(account: "alice")?.accessToken
            }
            #expect(loaded == TestDatabase.token(1).accessToken)
        }
    }

    @Test func aSaveInsideTheLockStaysWhenTheBodyThenThrows() async throws {
        try await TestDatabase.withClient { client in
            let store = try TestDatabase.store(client, table: TestDatabase.uniqueTable())
            let error = await #expect(throws: OAuth2Error.self) {
                try await store.withLock(account: "alice", timeout: .seconds(10)) { () async throws(OAuth2Error) in
                    try await store.save(TestDatabase.token(1), account: "alice")
                    throw OAuth2Error(code: .invalidRequest, message: "boom")
                }
            }
            #expect(error?.message == "boom")
            #expect(try await store.load(account: "alice")?.accessToken == TestDatabase.token(1).accessToken)
            // And the lock was let go.
            #expect(try await store.withLock(account: "alice", timeout: .milliseconds(500)) { true })
        }
    }

    @Test func aWaitingTaskCanBeCancelled() async throws {
        let table = TestDatabase.uniqueTable()
        try await TestDatabase.withClient { client in
            let store = try TestDatabase.store(client, table: table)
            let holder = try await AccountLockHolder.hold(store, account: "alice")
            let waiter = Task { try await store.withLock(account: "alice", timeout: .seconds(60)) {} }
            try await Task.sleep(for: .milliseconds(100))
            waiter.cancel()
            let error = await #expect(throws: OAuth2Error.self) { try await waiter.value }
            #expect(error?.code == .cancelled)
            try await holder.release()
        }
    }

    @Test func theLockIsReleasedWhenTheHoldersConnectionDies() async throws {
        let table = TestDatabase.uniqueTable()
        try await TestDatabase.withClient { admin in
            try await TestDatabase.withClient { first in
                let holderStore = try TestDatabase.store(first, table: table)
                let holder = try await AccountLockHolder.hold(holderStore, account: "alice")
                // The holder's backend dies, as it does when its process is killed.
                let key = holderStore.lockKey("alice")
                let killed = try await TestDatabase.execute(
                    admin,
                    """
                    SELECT pg_terminate_backend(pid) FROM pg_locks
                    WHERE locktype = 'advisory' AND granted AND objsubid = 1
                      AND classid = \(Int64(UInt64(bitPattern: key) >> 32))::bigint::oid AND objid = \(Int64(UInt64(bitPattern: key) & 0xFFFF_FFFF))::bigint::oid
                    """
                )
                #expect(killed.count == 1)

                let waiterStore = try TestDatabase.store(admin, table: table)
                let entered = try await waiterStore.withLock(account: "alice", timeout: .seconds(10)) { true }
                #expect(entered)
                try? await holder.release()
            }
        }
    }

    /// The holder's machine is still there but its network goes silent: an
    /// nftables rule drops every packet of its connection, both ways, so the
    /// server gets no answer and no reset, as when a host dies or is cut off.
    @Test(
        .enabled(if: SilentConnection.isAvailable, "needs root and nft (make test installs nftables)"),
        .timeLimit(.minutes(2)))
    func aHolderWhoseNetworkGoesSilentLosesTheLockWithinHalfAMinute() async throws {
        let table = TestDatabase.uniqueTable()
        try await TestDatabase.withClient { admin in
            try await TestDatabase.withClient { first in
                let holderStore = try TestDatabase.store(first, table: table)
                let holder = try await AccountLockHolder.hold(holderStore, account: "alice")
                let key = holderStore.lockKey("alice")
                let ports = try await TestDatabase.execute(
                    admin,
                    """
                    SELECT a.client_port FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
                    WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
                      AND l.classid = \(Int64(UInt64(bitPattern: key) >> 32))::bigint::oid AND l.objid = \(Int64(UInt64(bitPattern: key) & 0xFFFF_FFFF))::bigint::oid
                    """
                )
                let port = try #require(try ports.first?.decode(Int.self))
                let serverPort = try #require(URLComponents(string: TestDatabase.url)?.port)
                let silence = try SilentConnection(port: port, serverPort: serverPort)
                defer { silence.end() }

                let started = ContinuousClock.now
                let waiterStore = try TestDatabase.store(admin, table: table)
                let entered = try await waiterStore.withLock(account: "alice", timeout: .seconds(90)) { true }
                let waited = ContinuousClock.now - started
                #expect(entered)
                // Keepalives: 10 s idle, then 3 probes 5 s apart (the system's default is two hours).
                #expect(waited < .seconds(60), "the lock came free after \(waited)")
                silence.end()
                try? await holder.release()
            }
        }
    }

    /// What a pooler in transaction mode does: the statement after the lock
    /// runs on another server session than the one that took it.
    @Test func aLockThatIsNotOnTheNextStatementsSessionIsRefusedAsAPoolerInTransactionMode() async throws {
        try await TestDatabase.withClient { client in
            let store = try TestDatabase.store(client, table: TestDatabase.uniqueTable())
            let holder = try await AccountLockHolder.hold(store, account: "alice")
            let error = try await client.withConnection { other in
                try await #require(throws: OAuth2Error.self) {
                    try await store.requireLockOnSession(store.lockKey("alice"), on: other, what: "account \"alice\"")
                }
            }
            #expect(error.code == .storeError)
            #expect(error.message.contains("transaction mode"))
            try await holder.release()
        }
    }

    @Test func twoInstancesOnAnExpiredTokenRefreshOnce() async throws {
        let table = TestDatabase.uniqueTable()
        let transport = CannedTransport()
        let tokenURL = try #require(URL(string: TestDatabase.binding.tokenEndpoint))
        let requests = Counter()
        transport.respond { request in
            guard request.url == tokenURL else { return HTTPTransportResponse(status: 200) }
            requests.increment()
            try await Task.sleep(for: .milliseconds(100))
            let body =
                #"{"access_token":"fresh-access-token-000","token_type":"Bearer","expires_in":3600,"refresh_token":"fresh-refresh-token-000"}"#
            return HTTPTransportResponse(status: 200, headers: [.contentType: "application/json"], body: Data(body.utf8))
        }
        let configuration = try OAuth2Configuration(
            clientID: TestDatabase.binding.clientID,
            authorizationEndpoint: try #require(URL(string: "https://id.example/oauth/authorize")),
            tokenEndpoint: tokenURL
        )
        try await TestDatabase.withClient { first in
            try await TestDatabase.withClient { second in
                var expired = TestDatabase.token(1, expiresIn: -60)
                expired.binding = TestDatabase.binding
                try await TestDatabase.store(first, table: table).save(expired, account: "alice")
                let providers = try [first, second].map { client in
                    try OAuth2Provider(
                        configuration: configuration, store: try TestDatabase.store(client, table: table), transport: transport)
                }
                let tokens = try await withThrowingTaskGroup(of: String.self) { group in
                    for n in 0..<40 {
                        group.addTask {
                            try await providers[n % 2].client(account: "alice").token().accessToken.value
                        }
                    }
                    return try await group.reduce(into: Set<String>()) { $0.insert($1) }
                }
                #expect(tokens == ["fresh-access-token-000"])
                #expect(requests.value == 1)
                #expect(
                    try await TestDatabase.store(second, table: table).load(account: "alice")?.refreshToken?.value
                        == "fresh-refresh-token-000")
            }
        }
    }
}

final class Counter: Sendable {
    private let count = Mutex(0)
    func increment() { count.withLock { $0 += 1 } }
    var value: Int { count.withLock { $0 } }
}
