#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Crypto
public import Logging
public import OAuth2
public import PostgresNIO
import Synchronization

/// A ``/OAuth2/TokenStore`` on a PostgreSQL database, for apps that run as several
/// instances (processes, machines) and must share their users' tokens and
/// refresh each of them once.
///
/// ```swift
/// let postgres = PostgresClient(configuration: .init(host: "db", username: "app", password: password, database: "app", tls: .require(.makeClientConfiguration())))
/// let store = try PostgresTokenStore(client: postgres, configuration: configuration, encryption: .aesGCM(key), logger: logger)
/// let provider = try OAuth2Provider(configuration: configuration, store: store, transport: transport)
/// // and run `postgres.run()` for as long as the app runs (a ServiceLifecycle service).
/// ```
///
/// **Rows.** One table (``table``, `oauth2_tokens` by default), created on
/// first use with its schema version in a second table (`<table>_schema`);
/// a table whose version is newer than this library's is refused, never
/// guessed at, and an older one is upgraded in place. Both must be owned by
/// the role the store connects as (`current_user`): a table another role
/// made first under that name (its owner would read every row, and its
/// triggers would run as this role) is refused with `store_error`. The
/// schema each was found in (through `search_path`) is then written into
/// every statement, so a table of the same name made later in a schema
/// earlier on the path is never used. One row per provider
/// binding (token endpoint and client id) and account, the account as its
/// exact UTF-8 bytes (`bytea`), so a store is scoped to one configuration's
/// ``/OAuth2/TokenBinding`` and several providers share a table without meeting.
///
/// **Encryption.** The row holds ``/OAuth2/FileTokenStore``'s envelope, so what a
/// database dump holds is what a token file holds: AES-256-GCM under your
/// key, with the account and the binding as authenticated data. A row
/// copied to another account, or whose binding columns were changed, does
/// not decrypt or is refused; it is never read as a token. Plaintext rows
/// only with ``/OAuth2/FileTokenStore/Encryption/plaintext``, said explicitly.
///
/// **The account lock.** ``withLock(account:timeout:_:)`` takes a PostgreSQL
/// advisory lock on a connection it keeps for the lock's duration; loads and
/// saves made inside the lock (the client's "read, refresh, save") go through
/// that same connection. Why a session-level lock on a held connection rather
/// than a transaction-scoped one (`pg_advisory_xact_lock`):
/// - PostgreSQL drops it when the holder's connection or process dies, as it
///   would a transaction's lock, so a killed instance never strands it;
/// - the save of a refreshed token commits when `save` returns, as any save
///   does. Inside a transaction it would commit only when the lock is let
///   go, and a connection lost in between would lose a token the provider
///   has already rotated, after the client was told it was stored;
/// - the lock holder needs no second pooled connection for its reads and
///   writes, so as many accounts as the pool has connections can refresh at
///   once without waiting on each other for connections.
/// If letting the lock go fails, the connection is closed, which lets it go
/// too. A holder whose machine dies or whose network goes silent lets it go
/// within about 30 s: the lock's connection asks the server for TCP
/// keepalives (`tcp_keepalives_idle` 10 s, `_interval` 5 s, `_count` 3) and
/// `tcp_user_timeout` (25 s, where the server's system has it), so the
/// server ends the session, and with it the lock, when the holder's end stops
/// answering. A proxy that keeps TCP alive on its own (a pooler, a TCP load
/// balancer) hides that from the server: then its own timeouts are the bound.
/// A pooler in transaction mode (PgBouncer's `pool_mode = transaction`)
/// cannot carry a session's lock at all; a lock that is not on the session
/// that took it is refused with `store_error`. Waiting polls `pg_try_advisory_lock` (1–25 ms apart), is bounded by
/// the timeout (`lock_timeout`) and can be cancelled (`cancelled`).
///
/// **Errors.** Every failure is `store_error` with a message that names the
/// account and what failed (and the SQLSTATE), never a token, a password or
/// row data. While the database is down, calls fail with it: after waiting
/// for the pool, which keeps trying, up to `connectionTimeout`, or at once
/// with ``UnreachableDatabase/failFast(probing:)`` (a command-line tool);
/// the pool reconnects by itself when it is back.
public final class PostgresTokenStore: TokenStore {
    /// How rows are protected: ``/OAuth2/FileTokenStore/Encryption``.
    public typealias Encryption = FileTokenStore.Encryption
    /// A 256-bit key: ``/OAuth2/FileTokenStore/EncryptionKey``.
    public typealias EncryptionKey = FileTokenStore.EncryptionKey

    /// The table's schema version this library writes.
    public static let schemaVersion = 1

    /// The table's name.
    public let table: String
    /// The provider and client whose tokens this store holds.
    public let binding: TokenBinding

    let client: PostgresClient
    /// How long a call waits for a connection from the pool.
    let connectionTimeout: Duration
    let encryption: Encryption
    let unreachable: UnreachableDatabase
    let logger: Logger
    /// The tables' qualified names, once they are known to exist at
    /// ``schemaVersion`` and to be owned by the role the store connects as.
    private let preparedNames = Mutex<PreparedNames?>(nil)
    /// The records table's qualified name, once it is known to exist and to
    /// be owned by the role the store connects as.
    let preparedRecordTable = Mutex<String?>(nil)
    var prepared: PreparedNames? {
        get { preparedNames.withLock { $0 } }
        set { preparedNames.withLock { $0 = newValue } }
    }

    /// A store for `binding`'s tokens in `table`.
    ///
    /// - Parameters:
    ///   - client: the app's PostgreSQL client; the app runs it (`run()`).
    ///   - binding: the provider and client whose tokens the store holds (a configuration's ``/OAuth2/OAuth2Configuration/binding``).
    ///   - table: lowercase letters, digits and `_`, starting with a letter
    ///     or `_`, at most 48 characters.
    ///   - encryption: `.aesGCM(key)`, or `.plaintext` to store rows readable
    ///     by anyone who can read the table.
    ///   - connectionTimeout: how long a load, save or delete waits for a
    ///     connection (the pool retries while the database is away); then
    ///     `store_error`. The lock's wait is bounded by its own timeout.
    ///   - unreachable: whether a call waits for the pool while the database
    ///     cannot be reached (a server), or fails at once (a command-line tool).
    ///   - logger: the app's logger; it never sees a token or a password.
    /// - Throws: `invalid_configuration` for a table name outside those rules.
    public init(
        client: PostgresClient,
        binding: TokenBinding,
        table: String = "oauth2_tokens",
        encryption: Encryption,
        connectionTimeout: Duration = .seconds(10),
        unreachable: UnreachableDatabase = .waitForConnection,
        logger: Logger = Logger(label: "swift-oauth2.postgres")
    ) throws(OAuth2Error) {
        guard Self.isTableName(table) else {
            throw OAuth2Error(
                code: .invalidConfiguration,
                message:
                    "the token table's name must be lowercase letters, digits and _, start with a letter or _, and have at most 48 characters"
            )
        }
        self.client = client
        self.connectionTimeout = connectionTimeout
        self.binding = binding
        self.table = table
        self.encryption = encryption
        self.unreachable = unreachable
        self.logger = logger
    }

    /// A store for the tokens of `configuration`'s provider and client.
    public convenience init(
        client: PostgresClient,
        configuration: OAuth2Configuration,
        table: String = "oauth2_tokens",
        encryption: Encryption,
        connectionTimeout: Duration = .seconds(10),
        unreachable: UnreachableDatabase = .waitForConnection,
        logger: Logger = Logger(label: "swift-oauth2.postgres")
    ) throws(OAuth2Error) {
        try self.init(
            client: client, binding: configuration.binding, table: table, encryption: encryption,
            connectionTimeout: connectionTimeout, unreachable: unreachable, logger: logger
        )
    }

    // MARK: TokenStore

    public func load(account: String) async throws(OAuth2Error) -> AccessToken? {
        try Self.requireAccount(account)
        let key = Data(account.utf8)
        let envelope = try await run("read the token of \(FileTokenStore.describe(account))", account: account) { connection in
            try await self.values(
                """
                SELECT envelope FROM \(unescaped: self.quotedTable)
                WHERE token_endpoint = \(self.binding.tokenEndpoint) AND client_id = \(self.binding.clientID) AND account = \(key)
                """,
                as: Data.self,
                on: connection
            ).first
        }
        guard let envelope else { return nil }
        let token = try TokenFileFormat.decode(
            Array(envelope),
            account: account,
            encryption: encryption,
            subject: "the token row of \(FileTokenStore.describe(account)) in table \(table)"
        )
        // The envelope's binding is authenticated (when encrypted) and must be
        // the row's: a row whose binding columns were edited is not this provider's.
        guard token.binding == binding else {
            throw OAuth2Error.store(
                "the token row of \(FileTokenStore.describe(account)) in table \(table) holds a token issued to another provider or client than the row says; refusing it"
            )
        }
        return token
    }

    /// Stores `token` under `account` (an upsert: atomic). A token without a
    /// binding is stored with the store's; one issued to another provider or
    /// client is refused.
    public func save(_ token: AccessToken, account: String) async throws(OAuth2Error) {
        try Self.requireAccount(account)
        var token = token
        if token.binding == nil {
            token.binding = binding
        }
        guard token.binding == binding else {
            throw OAuth2Error.store(
                "refusing to store a token issued to \(token.binding.map(String.init(describing:)) ?? "another provider") in the store of \(binding)"
            )
        }
        let envelope = Data(try TokenFileFormat.encode(token, account: account, encryption: encryption))
        let key = Data(account.utf8)
        try await run("save the token of \(FileTokenStore.describe(account))", account: account) { connection in
            try await self.execute(
                """
                INSERT INTO \(unescaped: self.quotedTable) (token_endpoint, client_id, account, envelope, updated_at)
                VALUES (\(self.binding.tokenEndpoint), \(self.binding.clientID), \(key), \(envelope), now())
                ON CONFLICT (token_endpoint, client_id, account)
                DO UPDATE SET envelope = EXCLUDED.envelope, updated_at = EXCLUDED.updated_at
                """,
                on: connection
            )
        }
    }

    public func delete(account: String) async throws(OAuth2Error) {
        try Self.requireAccount(account)
        let key = Data(account.utf8)
        try await run("delete the token of \(FileTokenStore.describe(account))", account: account) { connection in
            try await self.execute(
                """
                DELETE FROM \(unescaped: self.quotedTable)
                WHERE token_endpoint = \(self.binding.tokenEndpoint) AND client_id = \(self.binding.clientID) AND account = \(key)
                """,
                on: connection
            )
        }
    }

    public func withLock<Result: Sendable>(
        account: String,
        timeout: Duration,
        _ body: () async throws(OAuth2Error) -> Result
    ) async throws(OAuth2Error) -> Result {
        try Self.requireAccount(account)
        try await prepareTable()
        let key = lockKey(account)
        let what = "\(FileTokenStore.describe(account)) in table \(table)"
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: timeout)
        do {
            return try await withLeasedConnection(timeout: timeout) { connection in
                await self.bindToHolder(connection)
                try await StoreLockWait.acquire(timeout: clock.now.duration(to: deadline), what: what) {
                    () async throws(OAuth2Error) -> Bool in
                    try await self.tryLock(key, on: connection, what: what)
                }
                do {
                    try await self.requireLockOnSession(key, on: connection, what: what)
                } catch {
                    await self.unlock(key, on: connection, what: what)
                    throw error
                }
                let holder = LockHolder(store: ObjectIdentifier(self), connection: connection)
                let outcome: Swift.Result<Result, any Error>
                do {
                    outcome = .success(try await Self.$holder.withValue(holder) { try await body() })
                } catch {
                    outcome = .failure(BodyFailure(error: error))
                }
                await self.unlock(key, on: connection, what: what)
                return try outcome.get()
            }
        } catch let failure as BodyFailure {
            // The body throws OAuth2Error only, which storeError hands back unchanged.
            throw storeError(failure.error, doing: "lock \(what)")
        } catch {
            throw storeError(error, doing: "lock \(what)")
        }
    }
}

extension PostgresTokenStore: CustomStringConvertible {
    public var description: String {
        "PostgresTokenStore(table \(table), \(binding))"
    }
}
