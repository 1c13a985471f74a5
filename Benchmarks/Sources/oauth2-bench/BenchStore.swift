#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import BenchCore
import OAuth2
import OAuth2Postgres
import PostgresNIO

/// The token store a scenario runs with (`--store memory|file|postgres`).
enum BenchStore {
    /// ``InMemoryTokenStore``, the provider's default.
    case memory
    /// ``FileTokenStore`` in `directory` (`--store-dir`).
    case file(directory: String)
    /// ``PostgresTokenStore`` on `url` (`--database-url`, with `?sslmode=disable`
    /// for a local cluster) with the password in `passwordFile`
    /// (`--database-password-file`), in `table` (`--table`, default `bench_tokens`).
    case postgres(url: String, passwordFile: String, table: String)

    /// Both stores encrypt (AES-256-GCM), so the two rows do the same work.
    /// A fixed key: benchmark tokens only, nothing to protect.
    static let key = try! FileTokenStore.EncryptionKey(bytes: (0..<32).map { UInt8($0) })

    init(_ arguments: Arguments) throws(BenchError) {
        switch arguments.optionalString("store") ?? "memory" {
        case "memory":
            self = .memory
        case "file":
            self = .file(directory: try arguments.string("store-dir"))
        case "postgres":
            self = .postgres(
                url: try arguments.string("database-url"),
                passwordFile: try arguments.string("database-password-file"),
                table: arguments.optionalString("table") ?? "bench_tokens"
            )
        default:
            throw BenchError("--store must be memory, file or postgres")
        }
    }

    /// The suffix of the scenario's name: "" for the default store.
    var suffix: String {
        switch self {
        case .memory: ""
        case .file: "-file"
        case .postgres: "-postgres"
        }
    }

    /// Runs `body` with the store; for PostgreSQL, with a running client of
    /// its own (a pool, as one app instance has), stopped when `body` returns.
    func with<T: Sendable>(
        configuration: OAuth2Configuration,
        _ body: (any TokenStore) async throws -> T
    ) async throws -> T {
        switch self {
        case .memory:
            return try await body(InMemoryTokenStore())
        case .file(let directory):
            return try await body(FileTokenStore(directory: directory, encryption: .aesGCM(Self.key)))
        case .postgres(let url, let passwordFile, let table):
            let client = PostgresClient(
                configuration: try PostgresTokenStore.clientConfiguration(url: url, password: try Self.readPassword(passwordFile))
            )
            let store = try PostgresTokenStore(client: client, configuration: configuration, table: table, encryption: .aesGCM(Self.key))
            return try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { await client.run() }
                defer { group.cancelAll() }
                return try await body(store)
            }
        }
    }

    /// The first line of a password file (never printed).
    static func readPassword(_ path: String) throws(BenchError) -> String {
        guard let file = fopen(path, "r") else { throw BenchError("cannot read the database password file \(path)") }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        while true {
            let character = getc(file)
            if character == EOF || character == 0x0A || character == 0x0D { break }
            bytes.append(UInt8(truncatingIfNeeded: character))
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
