import Foundation
import OAuth2
import OAuth2Postgres
import PostgresNIO
import Testing

/// `PostgresTokenStore.clientConfiguration(url:password:)`.
struct PostgresConnectionURLTests {
    @Test func readsUserHostPortDatabaseAndTLS() throws {
        let configuration = try PostgresTokenStore.clientConfiguration(
            url: "postgresql://app@db.example:6543/tokens?sslmode=require", password: "p")
        #expect(configuration.host == "db.example")
        #expect(configuration.port == 6543)
        #expect(configuration.username == "app")
        #expect(configuration.database == "tokens")
        #expect(configuration.password == "p")
    }

    @Test func defaultsToPort5432AndReadsABracketedIPv6Host() throws {
        let configuration = try PostgresTokenStore.clientConfiguration(url: "postgres://app@[::1]/tokens", password: nil)
        #expect(configuration.host == "::1")
        #expect(configuration.port == 5432)
    }

    @Test(arguments: [
        "http://app@db/tokens", "postgresql://db/tokens", "postgresql://app@db", "postgresql://app@/tokens",
        "postgresql://app@db/tokens?sslmode=sometimes", "postgresql://app@db/tokens?password=x",
    ])
    func refusesWhatItCannotUse(url: String) {
        #expect(throws: OAuth2Error.self) { try PostgresTokenStore.clientConfiguration(url: url, password: nil) }
    }

    @Test func refusesAPasswordInTheURLWithoutRepeatingIt() throws {
        let error = try #require(throws: OAuth2Error.self) {
            try PostgresTokenStore.clientConfiguration(url: "postgresql://app:hunter2-secret@db/tokens", password: nil)
        }
        #expect(error.code == .invalidConfiguration)
        #expect(!error.message.contains("hunter2-secret"))
    }

    // MARK: TLS by default

    @Test func withoutAnSslmodeTLSIsRequiredAndNothingGoesInTheClearWhenAServerSaysItHasNone() async throws {
        let server = try TLSStrippingServer()
        defer { server.stop() }
        let error = try await Self.load(url: "postgresql://app@127.0.0.1:\(server.port)/tokens")
        #expect(error.code == .storeError)
        #expect(server.seen.connections >= 1)
        // Not even the startup message (the user name) went out without TLS.
        #expect(server.seen.plaintext.isEmpty)
    }

    @Test func sslmodePreferSpelledOutGoesOnInTheClear() async throws {
        let server = try TLSStrippingServer()
        defer { server.stop() }
        _ = try await Self.load(url: "postgresql://app@127.0.0.1:\(server.port)/tokens?sslmode=prefer")
        #expect(String(decoding: server.seen.plaintext, as: UTF8.self).contains("app"))
    }

    @Test(arguments: ["prefer", "allow", "disable"])
    func anSslmodeWithoutTLSToANetworkHostIsAWarningLoggedOnce(sslmode: String) throws {
        let logs = RecordedLogs()
        _ = try PostgresTokenStore.clientConfiguration(
            url: "postgresql://app@db.example:6543/tokens?sslmode=\(sslmode)", password: "secret-pw", logger: logs.logger())
        #expect(logs.warnings.count == 1)
        #expect(logs.warnings.first?.contains("sslmode=\(sslmode)") == true)
        #expect(logs.warnings.first?.contains("db.example") == true)
        #expect(logs.all.allSatisfy { !$0.contains("secret-pw") })
    }

    @Test(arguments: [
        "postgresql://app@db.example/tokens", "postgresql://app@db.example/tokens?sslmode=require",
        "postgresql://app@db.example/tokens?sslmode=verify-full", "postgresql://app@127.0.0.1/tokens?sslmode=disable",
        "postgresql://app@localhost/tokens?sslmode=prefer", "postgresql://app@[::1]/tokens?sslmode=disable",
    ])
    func tlsRequiredOrALoopbackHostIsNoWarning(url: String) throws {
        let logs = RecordedLogs()
        _ = try PostgresTokenStore.clientConfiguration(url: url, password: nil, logger: logs.logger())
        #expect(logs.all.isEmpty)
    }

    /// A load through a store on `url`, which the test expects to fail.
    private static func load(url: String) async throws -> OAuth2Error {
        var configuration = try PostgresTokenStore.clientConfiguration(url: url, password: "pw")
        configuration.options.connectTimeout = .seconds(2)
        let client = PostgresClient(configuration: configuration)
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await client.run() }
            defer { group.cancelAll() }
            let store = try PostgresTokenStore(
                client: client, binding: TestDatabase.binding, table: "t", encryption: .aesGCM(TestDatabase.key),
                connectionTimeout: .seconds(1)
            )
            return try await #require(throws: OAuth2Error.self) { try await store.load(account: "alice") }
        }
    }
}
