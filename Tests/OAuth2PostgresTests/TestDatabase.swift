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

    static func store(
        _ client: PostgresClient,
        table: String,
        binding: TokenBinding = binding,
        encryption: PostgresTokenStore.Encryption = .aesGCM(key)
    ) throws -> PostgresTokenStore {
        try PostgresTokenStore(client: client, binding: binding, table: table, encryption: encryption)
    }

    static func token(_ n: Int, expiresIn: TimeInterval = 3600) -> AccessToken {
        AccessToken(
            accessToken: Secret("at-\(n)-0123456789abcdef"),
            expiresAt: Date(timeIntervalSince1970: (Date().timeIntervalSince1970 + expiresIn).rounded()),
            refreshToken: Secret("rt-\(n)-0123456789abcdef"),
            scopes: ["read"]
        )
    }

    /// Runs SQL as an administrator would (tampering, inspecting).
    @discardableResult
    static func execute(_ client: PostgresClient, _ query: PostgresQuery) async throws -> [PostgresRow] {
        var rows: [PostgresRow] = []
        for try await row in try await client.query(query) {
            rows.append(row)
        }
        return rows
    }
}

struct TestDatabaseError: Error, CustomStringConvertible {
    let description: String
}
