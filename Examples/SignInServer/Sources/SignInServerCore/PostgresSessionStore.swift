import Foundation
import Logging
import OAuth2
import PostgresNIO
import Synchronization

/// The sessions in a PostgreSQL table, shared by every instance of the app
/// that uses the same database and table: a session started on one instance
/// is found on any other, and ending it anywhere ends it everywhere.
///
/// **Rows.** One row per session (``table``, `signin_sessions` by default,
/// created on first use): the SHA-256 of the session id (the id itself is
/// never stored, so a copy of the table holds no usable cookie), the account,
/// the pending sign-in as its `Codable` JSON with the SHA-256 of its `state`,
/// when that sign-in started and when the session was last used. The app
/// never logs an id, and an error never holds one, nor row data.
///
/// **Expiry.** The same bounds as ``InMemorySessionStore``: a pending
/// sign-in is served for ``pendingLifetime``, a session for ``idleLifetime``
/// after its last use; each statement leaves out what expired, by the
/// instance's clock. Expired rows are deleted lazily: by the first session
/// an instance creates once a minute has passed since its last clean-up, or
/// by ``purgeExpired()``. There is no cap on the number of rows: a flood of
/// anonymous `/login` requests leaves rows that expire after
/// ``pendingLifetime``; rate limiting belongs in front of the app.
///
/// **Single use.** ``takePendingSignIn(of:state:)`` is one atomic statement
/// that locks the row, checks the state and clears the pending sign-in: of
/// two instances handed the same callback at once, one gets it, the other
/// finds nothing (PostgreSQL re-checks the row after the first commits).
///
/// **Failures.** Every call gives up after ``operationTimeout`` (postgres-nio
/// bounds neither the wait for a connection nor a statement) and throws
/// ``SessionStoreError``; the app answers 503. The app runs the
/// `PostgresClient` (``SignInApp`` adds it to its services).
public final class PostgresSessionStore: SessionStore {
    /// The table's name.
    public let table: String
    /// How long a started sign-in may take before its callback is refused.
    public let pendingLifetime: Duration
    /// How long an unused session lives.
    public let idleLifetime: Duration
    /// How long a call waits for the database before it fails.
    public let operationTimeout: Duration

    let client: PostgresClient
    private let logger: Logger
    private let now: @Sendable () -> Date
    private let upkeep = Mutex(Upkeep())

    private struct Upkeep {
        var tableReady = false
        var lastPurge: Date?
    }

    /// How often an instance deletes expired rows, at most.
    static let purgeInterval: TimeInterval = 60

    /// A store of sessions in `table`.
    ///
    /// - Parameters:
    ///   - client: the app's PostgreSQL client; the app runs it.
    ///   - table: lowercase letters, digits and `_`, starting with a letter
    ///     or `_`, at most 48 characters.
    ///   - pendingLifetime: 10 minutes by default.
    ///   - idleLifetime: 12 hours by default.
    ///   - operationTimeout: 10 seconds by default.
    ///   - logger: told when expired rows could not be deleted; never an id.
    ///   - now: the clock; tests pass their own.
    /// - Throws: `invalid_configuration` for a table name outside those rules.
    public init(
        client: PostgresClient,
        table: String = "signin_sessions",
        pendingLifetime: Duration = .seconds(600),
        idleLifetime: Duration = .seconds(12 * 3600),
        operationTimeout: Duration = .seconds(10),
        logger: Logger = Logger(label: "SignInServer.sessions"),
        now: @escaping @Sendable () -> Date = { Date() }
    ) throws(OAuth2Error) {
        guard Self.isTableName(table) else {
            throw OAuth2Error(code: .invalidConfiguration, message: Self.tableNameRule)
        }
        self.client = client
        self.table = table
        self.pendingLifetime = pendingLifetime
        self.idleLifetime = idleLifetime
        self.operationTimeout = operationTimeout
        self.logger = logger
        self.now = now
    }

    /// Whether `name` can name a table: lowercase letters, digits and `_`,
    /// starting with a letter or `_`, at most 48 characters (nothing to quote).
    public static func isTableName(_ name: String) -> Bool {
        name.range(of: "^[a-z_][a-z0-9_]{0,47}$", options: .regularExpression) != nil
    }

    static let tableNameRule =
        "a table's name must be lowercase letters, digits and _, start with a letter or _, and have at most 48 characters"

    // MARK: SessionStore

    public func account(of id: String?) async throws -> String? {
        guard let id else { return nil }
        let (now, idleCutoff, pendingCutoff) = times()
        return try await perform("read a session") {
            try await self.column(
                """
                UPDATE \(unescaped: self.quotedTable) SET last_seen = \(now)
                WHERE id_hash = \(SessionID.digest(id)) AND last_seen >= \(idleCutoff)
                    AND (account IS NOT NULL OR pending_since >= \(pendingCutoff))
                RETURNING account
                """,
                as: String?.self
            ).first ?? nil
        }
    }

    public func pendingSignIn(of id: String?) async throws -> PendingAuthorization? {
        guard let id else { return nil }
        let (now, idleCutoff, pendingCutoff) = times()
        let json = try await perform("read a pending sign-in") {
            try await self.column(
                """
                UPDATE \(unescaped: self.quotedTable) SET last_seen = \(now)
                WHERE id_hash = \(SessionID.digest(id)) AND last_seen >= \(idleCutoff) AND pending_since >= \(pendingCutoff)
                RETURNING pending::text
                """,
                as: String?.self
            ).first ?? nil
        }
        return try json.map(Self.decodePending)
    }

    public func takePendingSignIn(of id: String?, state: String) async throws -> PendingAuthorization? {
        guard let id else { return nil }
        let (now, idleCutoff, pendingCutoff) = times()
        // FOR UPDATE: a second statement for the same row waits for the first
        // to commit, then re-checks the row, whose state is gone by then.
        let json = try await perform("take a pending sign-in") {
            try await self.column(
                """
                WITH taken AS (
                    SELECT id_hash, pending FROM \(unescaped: self.quotedTable)
                    WHERE id_hash = \(SessionID.digest(id)) AND pending_state_hash = \(SessionID.digest(state))
                        AND pending_since >= \(pendingCutoff) AND last_seen >= \(idleCutoff)
                    FOR UPDATE
                )
                UPDATE \(unescaped: self.quotedTable) AS s
                SET pending = NULL, pending_state_hash = NULL, pending_since = NULL, last_seen = \(now)
                FROM taken WHERE s.id_hash = taken.id_hash
                RETURNING taken.pending::text
                """,
                as: String?.self
            ).first ?? nil
        }
        return try json.map(Self.decodePending)
    }

    public func startSignIn(_ pending: PendingAuthorization, session id: String?) async throws -> String {
        let json: String
        do {
            json = String(decoding: try JSONEncoder().encode(pending), as: UTF8.self)
        } catch {
            throw SessionStoreError("could not encode a pending sign-in: \(type(of: error))")
        }
        let stateHash = SessionID.digest(pending.state)
        let (now, idleCutoff, pendingCutoff) = times()
        if let id {
            let kept = try await perform("update a session") {
                try await self.column(
                    """
                    UPDATE \(unescaped: self.quotedTable)
                    SET pending = \(json)::jsonb, pending_state_hash = \(stateHash), pending_since = \(now), last_seen = \(now)
                    WHERE id_hash = \(SessionID.digest(id)) AND last_seen >= \(idleCutoff)
                        AND (account IS NOT NULL OR pending_since >= \(pendingCutoff))
                    RETURNING true
                    """,
                    as: Bool.self
                )
            }
            if !kept.isEmpty { return id }
        }
        return try await insertSession(replacing: id, account: nil, pending: (json, stateHash), now: now)
    }

    public func completeSignIn(session id: String?, account: String) async throws -> String {
        try await insertSession(replacing: id, account: account, pending: nil, now: now())
    }

    public func forgetAccount(of id: String?) async throws {
        guard let id else { return }
        let (_, _, pendingCutoff) = times()
        let hash = SessionID.digest(id)
        try await perform("forget a session's account") {
            try await self.execute(
                """
                DELETE FROM \(unescaped: self.quotedTable)
                WHERE id_hash = \(hash) AND (pending_since IS NULL OR pending_since < \(pendingCutoff))
                """
            )
            try await self.execute("UPDATE \(unescaped: self.quotedTable) SET account = NULL WHERE id_hash = \(hash)")
        }
    }

    public func endAll(account: String) async throws {
        try await perform("end an account's sessions") {
            try await self.execute("DELETE FROM \(unescaped: self.quotedTable) WHERE account = \(account)")
        }
    }

    public func end(_ id: String?) async throws {
        guard let id else { return }
        try await perform("end a session") {
            try await self.execute("DELETE FROM \(unescaped: self.quotedTable) WHERE id_hash = \(SessionID.digest(id))")
        }
    }

    // MARK: Upkeep

    /// Deletes the sessions that expired and clears expired pending sign-ins
    /// of signed-in ones.
    ///
    /// - Returns: how many sessions were deleted.
    @discardableResult
    public func purgeExpired() async throws -> Int {
        let (now, idleCutoff, pendingCutoff) = times()
        upkeep.withLock { $0.lastPurge = now }
        return try await perform("delete expired sessions") {
            let deleted = try await self.column(
                """
                DELETE FROM \(unescaped: self.quotedTable)
                WHERE last_seen < \(idleCutoff) OR (account IS NULL AND (pending_since IS NULL OR pending_since < \(pendingCutoff)))
                RETURNING true
                """,
                as: Bool.self
            ).count
            try await self.execute(
                """
                UPDATE \(unescaped: self.quotedTable) SET pending = NULL, pending_state_hash = NULL, pending_since = NULL
                WHERE pending_since < \(pendingCutoff)
                """
            )
            return deleted
        }
    }

    /// How many rows the table holds, expired ones included.
    public func rowCount() async throws -> Int {
        try await perform("count sessions") {
            try await self.column("SELECT count(*)::bigint FROM \(unescaped: self.quotedTable)", as: Int.self).first ?? 0
        }
    }

    // MARK: Private

    private var quotedTable: String { "\"\(table)\"" }

    /// Now, and the oldest last use and pending start still served.
    private func times() -> (now: Date, idleCutoff: Date, pendingCutoff: Date) {
        let now = now()
        return (now, now.addingTimeInterval(-idleLifetime.seconds), now.addingTimeInterval(-pendingLifetime.seconds))
    }

    /// Adds a session under a fresh id, ending `replaced` in the same statement.
    private func insertSession(
        replacing replaced: String?,
        account: String?,
        pending: (json: String, stateHash: Data)?,
        now: Date
    ) async throws -> String {
        let replacedHash = replaced.map(SessionID.digest)
        let pendingSince = pending.map { _ in now }
        // 256 random bits do not collide; the loop is only there to never reuse a row.
        for _ in 0..<3 {
            let id = SessionID.make()
            let inserted = try await perform("create a session") {
                try await self.column(
                    """
                    WITH ended AS (DELETE FROM \(unescaped: self.quotedTable) WHERE id_hash = \(replacedHash))
                    INSERT INTO \(unescaped: self.quotedTable) (id_hash, account, pending, pending_state_hash, pending_since, last_seen)
                    VALUES (\(SessionID.digest(id)), \(account), \(pending?.json)::jsonb, \(pending?.stateHash), \(pendingSince), \(now))
                    ON CONFLICT (id_hash) DO NOTHING
                    RETURNING true
                    """,
                    as: Bool.self
                )
            }
            if !inserted.isEmpty {
                await purgeIfDue(now: now)
                return id
            }
        }
        throw SessionStoreError("could not create a session in PostgreSQL: no fresh session id")
    }

    /// Deletes expired rows when this instance has not for ``purgeInterval``;
    /// a failure is logged, and the request goes on.
    private func purgeIfDue(now: Date) async {
        let due = upkeep.withLock { upkeep in
            guard upkeep.lastPurge.map({ now.timeIntervalSince($0) >= Self.purgeInterval }) ?? true else { return false }
            upkeep.lastPurge = now
            return true
        }
        guard due else { return }
        do {
            try await purgeExpired()
        } catch {
            logger.warning("could not delete expired sessions", metadata: ["error": "\(error)"])
        }
    }

    private static func decodePending(_ json: String) throws -> PendingAuthorization {
        do {
            return try JSONDecoder().decode(PendingAuthorization.self, from: Data(json.utf8))
        } catch {
            throw SessionStoreError("a session's pending sign-in in PostgreSQL is unreadable: \(type(of: error))")
        }
    }

    /// Makes the table on first use, in a transaction under an advisory lock
    /// of its own, so that instances starting together do not race to create it.
    private func prepareTable() async throws {
        if upkeep.withLock({ $0.tableReady }) { return }
        let table = quotedTable
        let logger = Self.quiet
        try await client.withTransaction(logger: logger) { connection in
            try await connection.query("SELECT pg_advisory_xact_lock(hashtext(\("SignInServer sessions " + self.table)))", logger: logger)
            try await connection.query(
                """
                CREATE TABLE IF NOT EXISTS \(unescaped: table) (
                    id_hash bytea PRIMARY KEY,
                    account text,
                    pending jsonb,
                    pending_state_hash bytea,
                    pending_since timestamptz,
                    last_seen timestamptz NOT NULL
                )
                """,
                logger: logger
            )
            try await connection.query(
                "CREATE INDEX IF NOT EXISTS \(unescaped: "\"\(self.table)_account\"") ON \(unescaped: table) (account)", logger: logger)
            try await connection.query(
                "CREATE INDEX IF NOT EXISTS \(unescaped: "\"\(self.table)_last_seen\"") ON \(unescaped: table) (last_seen)", logger: logger)
        }
        upkeep.withLock { $0.tableReady = true }
    }

    /// postgres-nio's logger for the statements: silent, since its debug and
    /// trace lines can show what was sent and received (ids' hashes, verifiers).
    private static let quiet = Logger(label: "SignInServer.postgres", factory: { _ in SwiftLogNoOpLogHandler() })

    private func execute(_ query: PostgresQuery) async throws {
        for try await _ in try await client.query(query, logger: Self.quiet) {}
    }

    private func column<T: PostgresDecodable & Sendable>(_ query: PostgresQuery, as type: T.Type) async throws -> [T] {
        var values: [T] = []
        for try await value in try await client.query(query, logger: Self.quiet).decode(T.self) {
            values.append(value)
        }
        return values
    }

    /// Runs `body` once the table exists, within ``operationTimeout``, every
    /// failure turned into a ``SessionStoreError`` that says what `action` was.
    private func perform<T: Sendable>(_ action: String, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
        do {
            return try await Self.withTimeout(operationTimeout) {
                try await self.prepareTable()
                return try await body()
            }
        } catch {
            throw Self.failure(error, doing: action)
        }
    }

    private struct Timeout: Error {}

    /// The first of `body`'s outcome and the timeout. `body` runs in a task of
    /// its own, cancelled when the time is up: a statement on a connection
    /// the server dropped may not end by itself, and a caller must not wait for it.
    private static func withTimeout<T: Sendable>(_ timeout: Duration, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
        let (outcomes, sink) = AsyncStream<Result<T, any Error>>.makeStream()
        let work = Task {
            do {
                sink.yield(.success(try await body()))
            } catch {
                sink.yield(.failure(error))
            }
        }
        let timer = Task {
            try? await Task.sleep(for: timeout)
            sink.yield(.failure(Timeout()))
        }
        defer { timer.cancel() }
        for await outcome in outcomes {
            if case .failure(let error) = outcome, error is Timeout {
                work.cancel()
            }
            return try outcome.get()
        }
        work.cancel()
        throw CancellationError()
    }

    /// A failure as a ``SessionStoreError``: from the error's kind and SQLSTATE
    /// only, since postgres-nio's errors can carry the statement and its values.
    private static func failure(_ error: any Error, doing action: String) -> SessionStoreError {
        let reason: String
        switch error {
        case let error as SessionStoreError:
            return error
        case is Timeout:
            reason = "no answer from the database in time (is it running and reachable?)"
        case is CancellationError:
            reason = "cancelled"
        case let error as PSQLError where error.code == .server:
            let state = (error.serverInfo?[.sqlState] ?? "?").filter { $0.isLetter || $0.isNumber }.prefix(5)
            reason = "the server answered SQLSTATE \(state)"
        case let error as PSQLError:
            reason = "postgres-nio failed (\(error.code))"
        default:
            reason = "\(type(of: error))"
        }
        return SessionStoreError("could not \(action) in PostgreSQL: \(reason)")
    }
}
