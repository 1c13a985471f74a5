import Foundation
import Logging
import OAuth2
import OAuth2Postgres
import PostgresNIO
import Testing

/// The PostgreSQL `make test` starts (scripts/postgres.sh): its URL and
/// password file come from the environment.
enum TestDatabase {
    static let isConfigured = !(ProcessInfo.processInfo.environment["OAUTH2_IT_POSTGRES_URL"] ?? "").isEmpty

    static let binding = TokenBinding(tokenEndpoint: "https://id.example/oauth/token", clientID: "app")
    static let otherBinding = TokenBinding(tokenEndpoint: "https://other.example/oauth/token", clientID: "app")
    static let key = try! FileTokenStore.EncryptionKey(bytes: (0..<32).map { UInt8($0) })

    static var url: String { ProcessInfo.processInfo.environment["OAUTH2_IT_POSTGRES_URL"] ?? "" }

    static func password() throws -> String {
        guard let path = ProcessInfo.processInfo.environment["OAUTH2_IT_POSTGRES_PASSWORD_FILE"] else {
            throw TestDatabaseError(description: "OAUTH2_IT_POSTGRES_PASSWORD_FILE is not set")
        }
        return try String(contentsOfFile: path, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    static func configuration(maximumConnections: Int = 20) throws -> PostgresClient.Configuration {
        var configuration = try PostgresTokenStore.clientConfiguration(url: url + "?sslmode=disable", password: try password())
        configuration.options.maximumConnections = maximumConnections
        return configuration
    }

    /// Runs `body` with a running client of its own (a pool: as one app instance would have).
    static func withClient<T: Sendable>(
        maximumConnections: Int = 20,
        _ body: (PostgresClient) async throws -> T
    ) async throws -> T {
        let client = PostgresClient(configuration: try configuration(maximumConnections: maximumConnections))
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await client.run() }
            defer { group.cancelAll() }
            return try await body(client)
        }
    }

    /// A table name no other test uses.
    static func uniqueTable() -> String {
        "t_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(20)
    }

    /// How long the tests' stores wait for a connection and an answer: 30 s,
    /// not the default 10. At the start of a full run every suite begins at
    /// once; a clean-clone CI run saw CREATE TABLE wait past 10 s, and a run
    /// beside two CPU hogs waited past 10 s for a connection. The tests of the
    /// timeout itself give their stores their own.
    static let connectionTimeout: Duration = .seconds(30)

    static func store(
        _ client: PostgresClient,
        table: String,
        binding: TokenBinding = binding,
        encryption: PostgresTokenStore.Encryption = .aesGCM(key)
    ) throws -> PostgresTokenStore {
        try PostgresTokenStore(client: client, binding: binding, table: table, encryption: encryption, connectionTimeout: connectionTimeout)
    }

    static func token(_ n: Int, expiresIn: TimeInterval = 3600) -> AccessToken {
        AccessToken(
            accessToken: Secret("at-\(n)-0123456789abcdef"),
            expiresAt: Date(timeIntervalSince1970: (Date().timeIntervalSince1970 + expiresIn).rounded()),
            refreshToken: Secret("rt-\(n)-0123456789abcdef"),
            scopes: ["read"]
        )
    }

    static let logger = Logger(label: "test")

    /// The columns of the store's table, for a table someone else makes.
    static let tokenTableColumns = """
        (token_endpoint text NOT NULL, client_id text NOT NULL, account bytea NOT NULL, envelope bytea NOT NULL,
        updated_at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (token_endpoint, client_id, account))
        """

    /// Runs `body` with a role `name` (no login) made for it, dropped with
    /// what it owns afterwards, whatever `body` does.
    static func withRole(_ name: String, _ client: PostgresClient, _ body: () async throws -> Void) async throws {
        // GRANT and DROP OWNED change the public schema's one catalog row:
        // two tests doing so at once can fail with "tuple concurrently updated".
        await roleChanges.acquire()
        do {
            try await withRoleMadeAlone(name, client, body)
        } catch {
            await roleChanges.release()
            throw error
        }
        await roleChanges.release()
    }

    /// The tests that make roles, one at a time.
    private static let roleChanges = OneAtATime()

    private static func withRoleMadeAlone(_ name: String, _ client: PostgresClient, _ body: () async throws -> Void) async throws {
        try await execute(client, "CREATE ROLE \(unescaped: name) NOLOGIN")
        try await execute(client, "GRANT CREATE ON SCHEMA public TO \(unescaped: name)")
        let outcome: Result<Void, any Error>
        do {
            try await body()
            outcome = .success(())
        } catch {
            outcome = .failure(error)
        }
        try await execute(client, "DROP OWNED BY \(unescaped: name) CASCADE")
        try await execute(client, "DROP ROLE \(unescaped: name)")
        try outcome.get()
    }

    /// Runs `body` on one connection acting as `role` (SET ROLE), reset afterwards.
    static func asRole(_ role: String, _ client: PostgresClient, _ body: (PostgresConnection) async throws -> Void) async throws {
        try await client.withConnection { connection in
            try await connection.query("SET ROLE \(unescaped: role)", logger: logger)
            do {
                try await body(connection)
            } catch {
                _ = try? await connection.query("RESET ROLE", logger: logger)
                throw error
            }
            try await connection.query("RESET ROLE", logger: logger)
        }
    }

    /// Runs SQL as an administrator would (tampering, inspecting). A failure
    /// says what the server said: postgres-nio's own description hides it.
    @discardableResult
    static func execute(_ client: PostgresClient, _ query: PostgresQuery) async throws -> [PostgresRow] {
        do {
            var rows: [PostgresRow] = []
            for try await row in try await client.query(query) {
                rows.append(row)
            }
            return rows
        } catch let error as PSQLError {
            throw TestDatabaseError(description: "\(query.sql): \(error.serverInfo?[.message] ?? String(describing: error.code))")
        }
    }
}

/// An async lock for tests: whoever holds it runs alone among those that take it.
actor OneAtATime {
    private var held = false
    private var waiting: [CheckedContinuation<Void, Never>] = []

    func acquire() async {
        guard held else {
            held = true
            return
        }
        await withCheckedContinuation { waiting.append($0) }
    }

    func release() {
        if waiting.isEmpty {
            held = false
        } else {
            waiting.removeFirst().resume()
        }
    }
}

struct TestDatabaseError: Error, CustomStringConvertible {
    let description: String
}
