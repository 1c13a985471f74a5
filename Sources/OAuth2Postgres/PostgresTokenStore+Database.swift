#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Crypto
import Logging
package import OAuth2
import NIOSSL
package import PostgresNIO
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

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

    /// No connection came from the pool in time.
    struct ConnectionTimeout: Error {
        var timeout: Duration
    }

    /// A connection of ``UnreachableDatabase/failFast(probing:)`` could not be made.
    struct Unreachable: Error {
        var error: any Error
    }

    private enum LeaseEvent: Sendable {
        case leased(PostgresConnection)
        case failed(any Error)
        case unreachable(any Error)
        case timedOut
    }

    /// Runs `body` on a connection from the pool, waiting at most `timeout`
    /// for one: the pool itself waits as long as it takes, retrying while
    /// the database is down, and a store call must end with an error instead
    /// (at once with ``UnreachableDatabase/failFast(probing:)``: see ``startProbe(_:events:)``).
    ///
    /// The connection is leased in a child task that keeps it until `body`
    /// is done; `body` runs in the calling task (it may not escape).
    func withLeasedConnection<T: Sendable>(
        timeout: Duration,
        _ body: (PostgresConnection) async throws -> T
    ) async throws -> T {
        let (events, eventSink) = AsyncStream<LeaseEvent>.makeStream()
        let (done, doneSignal) = AsyncStream<Void>.makeStream()
        let client = client
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                do {
                    try await client.withConnection { connection in
                        eventSink.yield(.leased(connection))
                        for await _ in done {}
                    }
                } catch {
                    eventSink.yield(.failed(error))
                }
            }
            let timer = Task {
                try? await Task.sleep(for: timeout)
                eventSink.yield(.timedOut)
            }
            let probe = startProbe(unreachable, events: eventSink)
            defer {
                timer.cancel()
                probe?.cancel()
                doneSignal.finish()
            }
            var iterator = events.makeAsyncIterator()
            switch await iterator.next() {
            case .leased(let connection)?:
                timer.cancel()
                probe?.cancel()
                return try await body(connection)
            case .failed(let error)?:
                throw error
            case .unreachable(let error)?:
                group.cancelAll()
                throw Unreachable(error: error)
            case .timedOut?:
                group.cancelAll()
                throw ConnectionTimeout(timeout: timeout)
            case nil:
                group.cancelAll()
                throw CancellationError()
            }
        }
    }

    /// For ``UnreachableDatabase/failFast(probing:)``: when no connection
    /// came from the pool within ``UnreachableDatabase/probeDelay``, makes
    /// one directly and reports it when it cannot be made; one that can is
    /// closed at once, and the call goes on waiting for the pool.
    private func startProbe(_ unreachable: UnreachableDatabase, events: AsyncStream<LeaseEvent>.Continuation) -> Task<Void, Never>? {
        guard case .failFast(let configuration) = unreachable.kind else { return nil }
        return Task {
            do {
                try await Task.sleep(for: UnreachableDatabase.probeDelay)
            } catch {
                return
            }
            do {
                let connection = try await PostgresConnection.connect(
                    configuration: configuration, id: 0,
                    logger: Logger(label: "swift-oauth2.postgres.probe") { _ in SwiftLogNoOpLogHandler() })
                Self.close(connection)
            } catch {
                if !Task.isCancelled {
                    events.yield(.unreachable(error))
                }
            }
        }
    }

    /// The tables' names, each qualified with its schema and quoted as SQL identifiers.
    struct PreparedNames: Sendable {
        var table: String
        var schemaTable: String
    }

    /// The table's name for a statement: qualified once ``prepareTable()`` found it.
    var quotedTable: String { prepared?.table ?? Self.quote(table) }

    /// `name` as an SQL identifier (``isTableName(_:)`` allows nothing that needs
    /// escaping; a schema's name may need it).
    static func quote(_ name: String) -> String {
        "\"" + name.replacing("\"", with: "\"\"") + "\""
    }

    static func isTableName(_ name: String) -> Bool {
        guard let first = name.utf8.first, name.utf8.count <= 48 else { return false }
        let isLetter = { (byte: UInt8) in (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || byte == UInt8(ascii: "_") }
        return isLetter(first) && name.utf8.allSatisfy { isLetter($0) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }
    }

    static func requireAccount(_ account: String) throws(OAuth2Error) {
        guard !account.isEmpty else {
            throw OAuth2Error.store("the account name is empty")
        }
    }

    /// Runs `body` on the connection holding `account`'s lock when this task
    /// holds it, else on one leased from the pool; the table is made first.
    ///
    /// - Parameter action: what the message says could not be done ("save the token of account "x"").
    @discardableResult
    func run<T: Sendable>(
        _ action: String,
        account: String,
        _ body: (PostgresConnection) async throws -> T
    ) async throws(OAuth2Error) -> T {
        try await prepareTable()
        do {
            if let holder = Self.holder, holder.store == ObjectIdentifier(self) {
                return try await body(holder.connection)
            }
            return try await withLeasedConnection(timeout: connectionTimeout, body)
        } catch {
            throw storeError(error, doing: action)
        }
    }

    /// Makes the table on first use, or checks its schema version, once per
    /// store value (again after a failure).
    ///
    /// In one transaction under a transaction-scoped advisory lock of its
    /// own, so instances starting together do not race to create it.
    func prepareTable() async throws(OAuth2Error) {
        if prepared != nil { return }
        let setupKey = Self.key(of: ["swift-oauth2 schema", table])
        let names: PreparedNames
        do {
            names = try await withLeasedConnection(timeout: connectionTimeout) { connection in
                try await self.execute("BEGIN", on: connection)
                do {
                    let names = try await self.prepareTable(on: connection, setupKey: setupKey)
                    try await self.execute("COMMIT", on: connection)
                    return names
                } catch {
                    try? await self.execute("ROLLBACK", on: connection)
                    throw error
                }
            }
        } catch {
            throw storeError(error, doing: "prepare the token table \(table)")
        }
        prepared = names
    }

    private func prepareTable(on connection: PostgresConnection, setupKey: Int64) async throws -> PreparedNames {
        try await execute("SELECT pg_advisory_xact_lock(\(setupKey))", on: connection)
        let tableName = Self.quote(table)
        let schemaTableName = Self.quote(table + "_schema")
        // Before anything reads or writes them: another role's table is refused.
        var tableSchema = try await ownSchema(of: tableName, on: connection)
        var schemaTableSchema = try await ownSchema(of: schemaTableName, on: connection)
        let version =
            schemaTableSchema != nil
            ? try await values(
                "SELECT version FROM \(unescaped: Self.quote(schemaTableSchema ?? "") + "." + schemaTableName)", as: Int.self,
                on: connection
            ).max() : nil
        switch version {
        case nil:
            try await execute(
                """
                CREATE TABLE IF NOT EXISTS \(unescaped: tableName) (
                    token_endpoint text NOT NULL,
                    client_id text NOT NULL,
                    account bytea NOT NULL,
                    envelope bytea NOT NULL,
                    updated_at timestamptz NOT NULL DEFAULT now(),
                    PRIMARY KEY (token_endpoint, client_id, account)
                )
                """,
                on: connection
            )
            try await execute(
                "CREATE TABLE IF NOT EXISTS \(unescaped: schemaTableName) (version integer NOT NULL)",
                on: connection
            )
            tableSchema = try await ownSchema(of: tableName, on: connection)
            schemaTableSchema = try await ownSchema(of: schemaTableName, on: connection)
        case let version? where version > Self.schemaVersion:
            throw OAuth2Error.store(
                "the token table \(self.table) has schema version \(version), newer than this version of swift-oauth2 reads (\(Self.schemaVersion)); upgrade swift-oauth2 instead of letting it guess"
            )
        case let version? where version < 1:
            throw OAuth2Error.store("the token table \(self.table) has schema version \(version), which no version of swift-oauth2 wrote")
        case .some:
            break
        }
        guard let tableSchema, let schemaTableSchema else {
            throw OAuth2Error.store("the token table \(table) or its schema table is missing after it was made")
        }
        let names = PreparedNames(
            table: Self.quote(tableSchema) + "." + tableName,
            schemaTable: Self.quote(schemaTableSchema) + "." + schemaTableName
        )
        switch version {
        case nil:
            try await execute("DELETE FROM \(unescaped: names.schemaTable)", on: connection)
            try await execute("INSERT INTO \(unescaped: names.schemaTable) (version) VALUES (\(Self.schemaVersion))", on: connection)
        case let version?:
            // Upgrades: one step per version, each in this transaction.
            for from in version..<Self.schemaVersion {
                try await Self.upgrade(from: from, connection: connection, store: self)
            }
            if version < Self.schemaVersion {
                try await execute("UPDATE \(unescaped: names.schemaTable) SET version = \(Self.schemaVersion)", on: connection)
            }
        }
        return names
    }

    /// The schema of the table `name` resolves to on the `search_path`, nil
    /// when there is none; a table the connecting role does not own is refused.
    private func ownSchema(of name: String, on connection: PostgresConnection) async throws -> String? {
        guard
            let owner = try await values(
                "SELECT pg_get_userbyid(relowner)::text FROM pg_class WHERE oid = to_regclass(\(name))", as: String.self, on: connection
            ).first
        else { return nil }
        let role = try await values("SELECT current_user::text", as: String.self, on: connection).first
        guard owner == role else {
            throw OAuth2Error.store(
                "the token table \(name) belongs to the database role \(OAuth2Error.sanitize(String(owner.prefix(63)))), not to the role this store connects as; refusing to use it (its owner could read every token, and its triggers would run as this role): drop it, or make this role its owner"
            )
        }
        return try await values(
            "SELECT n.nspname::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = to_regclass(\(name))",
            as: String.self, on: connection
        ).first
    }

    /// The step from schema `version` to the next. Version 1 is the first;
    /// a later one adds its step here.
    private static func upgrade(from version: Int, connection: PostgresConnection, store: PostgresTokenStore) async throws {
        throw OAuth2Error.store("the token table \(store.table) has schema version \(version), and no upgrade from it exists")
    }

    /// No answer to a statement in time.
    struct StatementTimeout: Error {
        var timeout: Duration
    }

    /// Runs a statement whose rows do not matter.
    func execute(_ query: PostgresQuery, on connection: PostgresConnection) async throws {
        _ = try await values(query, as: Bool?.self, decoding: false, on: connection)
    }

    /// Runs a statement and decodes its rows' single column, waiting at most
    /// ``connectionTimeout`` for the whole answer.
    ///
    /// postgres-nio does not bound a statement, and one sent on a connection
    /// whose server process was just terminated can wait for ever; the store
    /// gives up, closes that connection (whatever state it is in) and fails.
    func values<T: PostgresDecodable & Sendable>(
        _ query: PostgresQuery,
        as type: T.Type,
        decoding: Bool = true,
        on connection: PostgresConnection
    ) async throws -> [T] {
        let logger = logger
        let timeout = connectionTimeout
        let outcome = Mutex<CheckedContinuation<[T], any Error>?>(nil)
        return try await withCheckedThrowingContinuation { continuation in
            outcome.withLock { $0 = continuation }
            let finish = { @Sendable (result: Swift.Result<[T], any Error>) -> Bool in
                guard
                    let waiting = outcome.withLock({ value in
                        defer { value = nil }
                        return value
                    })
                else { return false }
                waiting.resume(with: result)
                return true
            }
            // Cancelled as soon as the statement ends: no sleeping task is
            // left behind per statement.
            let timer = Task {
                do { try await Task.sleep(for: timeout) } catch { return }
                if finish(.failure(StatementTimeout(timeout: timeout))) {
                    // A statement ignores task cancellation; closing its connection ends it.
                    Self.close(connection)
                }
            }
            Task {
                let result: Swift.Result<[T], any Error>
                do {
                    let rows = try await connection.query(query, logger: logger)
                    var values: [T] = []
                    if decoding {
                        for try await value in rows.decode(T.self) { values.append(value) }
                    } else {
                        for try await _ in rows {}
                    }
                    result = .success(values)
                } catch {
                    result = .failure(error)
                }
                _ = finish(result)
                timer.cancel()
            }
        }
    }

    /// Closes a connection in the background: closing one that hangs may hang too.
    static func close(_ connection: PostgresConnection) {
        Task { try? await connection.close() }
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

    /// A failure as `store_error`: what could not be done and why, from the
    /// error's kind and SQLSTATE only. postgres-nio's errors can carry the
    /// query and its bound values (tokens), and a server message can quote
    /// data; neither is ever put in the message.
    func storeError(_ error: any Error, doing action: String) -> OAuth2Error {
        if let error = error as? OAuth2Error { return error }
        if let error = error as? PostgresTransactionError, let cause = error.closureError ?? error.beginError ?? error.commitError {
            return storeError(cause, doing: action)
        }
        if error is CancellationError || Task.isCancelled {
            return OAuth2Error(code: .cancelled, message: "\(action) was cancelled")
        }
        if let error = error as? ConnectionTimeout {
            return OAuth2Error.store(
                "could not \(action) in PostgreSQL: no connection to the database within \(error.timeout) (is it running and reachable, and are the credentials right?)"
            )
        }
        if let error = error as? Unreachable {
            return storeError(error.error, doing: action)
        }
        if let error = error as? StatementTimeout {
            return OAuth2Error.store("could not \(action) in PostgreSQL: the database did not answer within \(error.timeout)")
        }
        guard let error = error as? PSQLError else {
            return OAuth2Error.store("could not \(action) in PostgreSQL: \(type(of: error))")
        }
        let reason: String
        switch error.code {
        case .server:
            let state = error.serverInfo?[.sqlState] ?? "?"
            reason = "the server answered SQLSTATE \(OAuth2Error.sanitize(String(state.prefix(5))))\(Self.explanation(ofSQLState: state))"
        case .connectionError where error.underlying is NIOSSLError:
            reason =
                "the TLS handshake with the database failed (its certificate must be for this host name and signed by a root this client trusts: the system's, or the file sslrootcert= names)"
        case .connectionError:
            reason =
                Self.systemReason(error.underlying).map { "could not connect to the database: \($0)" }
                ?? "the connection to the database failed"
        case .serverClosedConnection, .uncleanShutdown:
            reason = "the connection to the database failed or was closed"
        case .clientClosedConnection, .poolClosed:
            reason = "the PostgreSQL client is shut down or not running (run the PostgresClient)"
        case .sslUnsupported:
            reason =
                "the database offers no TLS, and the URL's sslmode (require by default) needs it (for a server on this machine: sslmode=disable)"
        case .failedToAddSSLHandler, .receivedUnencryptedDataAfterSSLRequest:
            reason = "TLS to the database failed"
        case .unsupportedAuthMechanism, .authMechanismRequiresPassword, .saslError:
            reason = "authenticating to the database failed"
        case .queryCancelled:
            reason = "the query was cancelled"
        default:
            reason = "postgres-nio failed (\(error.code))"
        }
        return OAuth2Error.store("could not \(action) in PostgreSQL: \(reason)")
    }

    /// Why a connection could not be made, in the system's words, for the
    /// reasons a person can act on: read from the description of SwiftNIO's
    /// error (this module does not import SwiftNIO's own error types), and
    /// only ever one of these fixed texts.
    static func systemReason(_ error: (any Error)?) -> String? {
        guard let error else { return nil }
        let text = String(describing: error)
        for code in [ECONNREFUSED, EHOSTUNREACH, ENETUNREACH, ETIMEDOUT, ECONNRESET, EACCES] where text.contains("(errno: \(code))") {
            return String(cString: strerror(code)).lowercased()
        }
        if text.contains("DNS error") {
            return "its host name could not be resolved"
        }
        return nil
    }

    private static func explanation(ofSQLState state: String) -> String {
        switch state {
        case "28P01", "28000": " (authentication failed)"
        case "3D000": " (no such database)"
        case "42P01": " (no such table)"
        case "42501": " (permission denied)"
        case "53300": " (too many connections)"
        case "57P01", "57P02", "57P03": " (the server is shutting down or starting up)"
        case "25006": " (the database is read-only)"
        case "53100": " (the database's disk is full)"
        default: ""
        }
    }
}
