import Crypto
package import OAuth2
package import PostgresNIO

/// The account lock's statements: a session-level advisory lock on a
/// connection kept for the lock's duration (see "The account lock" on
/// ``PostgresTokenStore``).
extension PostgresTokenStore {
    /// The connection holding a lock of this store, for the store calls its
    /// holder makes inside the lock (see "The account lock"): any account's,
    /// so a holder never waits for a second connection from the pool.
    struct LockHolder: Sendable {
        var store: ObjectIdentifier
        var connection: PostgresConnection
    }

    @TaskLocal static var holder: LockHolder?

    /// An error the lock's body threw, told apart from the store's own.
    struct BodyFailure: Error {
        var error: any Error
    }

    /// Takes the account's advisory lock if it is free.
    func tryLock(_ key: Int64, on connection: PostgresConnection, what: String) async throws(OAuth2Error) -> Bool {
        do {
            return try await values("SELECT pg_try_advisory_lock(\(key))", as: Bool.self, on: connection) == [true]
        } catch {
            throw storeError(error, doing: "lock \(what)")
        }
    }

    /// Asks the server to notice within about 30 s that the lock holder's end
    /// of `connection` stopped answering (its machine died, its network was
    /// cut), and to end the session, which lets its advisory locks go: TCP
    /// keepalives (idle 10 s, then every 5 s, 3 unanswered), and a timeout
    /// for data sent and never acknowledged (`tcp_user_timeout`, which only
    /// some systems have: where the server refuses it, keepalives alone).
    /// Best effort: a failure leaves the system's defaults (hours).
    func bindToHolder(_ connection: PostgresConnection) async {
        let keepalives =
            "set_config('tcp_keepalives_idle', '10', false), set_config('tcp_keepalives_interval', '5', false), set_config('tcp_keepalives_count', '3', false)"
        do {
            try await execute("SELECT \(unescaped: keepalives), set_config('tcp_user_timeout', '25000', false)", on: connection)
        } catch {
            _ = try? await execute("SELECT \(unescaped: keepalives)", on: connection)
        }
    }

    /// Checks that the lock just taken is held by the session that took it,
    /// as later statements of this connection will see it: a pooler in
    /// transaction mode runs each statement on whichever server session is
    /// free, so a session's lock stays behind on a session others then use.
    package func requireLockOnSession(_ key: Int64, on connection: PostgresConnection, what: String) async throws(OAuth2Error) {
        let held: [Bool]
        do {
            // An advisory lock on a bigint: its high 32 bits in classid, its low in objid, objsubid 1.
            held = try await values(
                """
                SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted AND pid = pg_backend_pid()
                    AND classid = ((\(key)::bigint >> 32) & 4294967295)::oid AND objid = (\(key)::bigint & 4294967295)::oid AND objsubid = 1)
                """,
                as: Bool.self, on: connection)
        } catch {
            throw storeError(error, doing: "lock \(what)")
        }
        guard held == [true] else {
            throw OAuth2Error.store(
                "could not lock \(what) in PostgreSQL: the lock was taken, but not on the session this connection's next statement ran on; is a pooler in transaction mode (PgBouncer pool_mode = transaction) between the store and PostgreSQL? The store's account lock needs session mode or a direct connection"
            )
        }
    }

    /// Lets the account's lock go; when that fails the connection is closed,
    /// which lets it go too (PostgreSQL drops a closed session's locks).
    func unlock(_ key: Int64, on connection: PostgresConnection, what: String) async {
        var released = false
        do {
            released = try await values("SELECT pg_advisory_unlock(\(key))", as: Bool.self, on: connection) == [true]
        } catch {
            released = false
        }
        if !released {
            logger.warning("could not release the lock of \(what); closing its connection, which releases it")
            Self.close(connection)
        }
    }

    /// The 64-bit advisory lock key of `account`: a hash of the table, the
    /// binding and the account's bytes, each length-prefixed. Two accounts
    /// whose keys collided (one chance in 2^64) would only wait for each other.
    package func lockKey(_ account: String) -> Int64 {
        Self.key(of: ["swift-oauth2 token lock", table, binding.tokenEndpoint, binding.clientID, account])
    }

    static func key(of fields: [String]) -> Int64 {
        var hash = SHA256()
        for field in fields {
            let bytes = Array(field.utf8)
            let count = UInt64(bytes.count)
            hash.update(data: (0..<8).reversed().map { UInt8(truncatingIfNeeded: count >> ($0 * 8)) })
            hash.update(data: bytes)
        }
        return Array(hash.finalize().prefix(8)).reduce(Int64(0)) { ($0 << 8) | Int64($1) }
    }
}
