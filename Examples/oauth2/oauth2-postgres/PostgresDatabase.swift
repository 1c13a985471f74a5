import Logging
import OAuth2
import OAuth2CLI
import OAuth2Postgres
import PostgresNIO

/// A PostgreSQL database holding the CLI's tokens (``PostgresTokenStore``).
struct PostgresDatabase: TokenDatabase {
    let client: PostgresClient
    /// What a store call connects with to learn at once why the pool has no
    /// connection: a person is waiting, and the pool would retry for the
    /// whole timeout (``PostgresTokenStore/UnreachableDatabase/failFast(probing:)``).
    let probe: PostgresConnection.Configuration

    static func open(url: String, password: String?, logger: Logger) throws -> any TokenDatabase {
        // A sslmode without TLS is said on stderr whether or not --verbose is given.
        let warnings = Logger(label: "oauth2") { _ in WarningLogHandler() }
        let configuration = try PostgresTokenStore.clientConfiguration(url: url, password: password, logger: warnings)
        // At trace level postgres-nio logs every message from the server, rows (tokens) included.
        var background = logger
        background.logLevel = max(background.logLevel, .debug)
        return PostgresDatabase(
            client: PostgresClient(configuration: configuration, backgroundLogger: background),
            probe: try PostgresTokenStore.connectionConfiguration(url: url, password: password)
        )
    }

    func run() async {
        await client.run()
    }

    func store(
        binding: TokenBinding, table: String, key: FileTokenStore.EncryptionKey?, timeout: Duration, logger: Logger
    ) throws -> any TokenStore {
        try PostgresTokenStore(
            client: client, binding: binding, table: table, encryption: key.map { .aesGCM($0) } ?? .plaintext,
            connectionTimeout: timeout, unreachable: .failFast(probing: probe), logger: logger
        )
    }
}
