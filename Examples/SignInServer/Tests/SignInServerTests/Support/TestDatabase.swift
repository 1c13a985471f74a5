import Foundation
import OAuth2Postgres
import PostgresNIO
import Testing

/// Tables of their own in the PostgreSQL that `make test` starts
/// (scripts/postgres.sh; scripts/test-server-example.sh starts one when
/// `OAUTH2_IT_POSTGRES_URL` is unset): each test gets new ones, so tests
/// never see each other's rows.
struct TestDatabase: Sendable {
    let tokenTable: String
    let sessionTable: String

    /// New table names no other test uses.
    init() {
        let suffix = UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(16)
        tokenTable = "tokens_\(suffix)"
        sessionTable = "sessions_\(suffix)"
    }

    static var url: String? {
        ProcessInfo.processInfo.environment["OAUTH2_IT_POSTGRES_URL"].flatMap { $0.isEmpty ? nil : $0 }
    }

    static var passwordFile: String? {
        ProcessInfo.processInfo.environment["OAUTH2_IT_POSTGRES_PASSWORD_FILE"]
    }

    static var isConfigured: Bool { url != nil }

    /// Why the PostgreSQL suites are disabled, shown by `swift test`.
    static let disabledReason: Comment =
        "set OAUTH2_IT_POSTGRES_URL and OAUTH2_IT_POSTGRES_PASSWORD_FILE (scripts/postgres.sh start; . .build/postgres/env.sh), or run `make test-server-example`"

    /// The variables that put an app's tokens and sessions in these tables.
    var environment: [String: String] {
        [
            "SIGNIN_DATABASE_URL": (Self.url ?? "") + "?sslmode=disable",
            "SIGNIN_DATABASE_PASSWORD_FILE": Self.passwordFile ?? "",
            "SIGNIN_TOKEN_TABLE": tokenTable,
            "SIGNIN_SESSION_TABLE": sessionTable,
        ]
    }

    /// Runs `body` with a running client of its own: its own pool, as an app instance has.
    static func withClient<T: Sendable>(_ body: (PostgresClient) async throws -> T) async throws -> T {
        let url = try requireValue(url, "OAUTH2_IT_POSTGRES_URL is not set")
        let password = try String(
            contentsOfFile: try requireValue(passwordFile, "OAUTH2_IT_POSTGRES_PASSWORD_FILE is not set"), encoding: .utf8)
        let client = PostgresClient(
            configuration: try PostgresTokenStore.clientConfiguration(
                url: url + "?sslmode=disable", password: password.trimmingCharacters(in: .newlines))
        )
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await client.run() }
            defer { group.cancelAll() }
            return try await body(client)
        }
    }
}
