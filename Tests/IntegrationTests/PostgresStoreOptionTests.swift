import Foundation
import LoopbackSockets
import Testing

/// `--store postgresql://…` as a person meets it when something is wrong:
/// the answer comes at once, and a URL that lets TLS go is said on stderr.
/// No database or provider needed.
@Suite struct PostgresStoreOptionTests {
    /// Reads the store only: no provider is asked anything.
    private static func tokenArguments(store: String, timeout: Int) -> [String] {
        [
            "token", "--format", "json", "--store", store, "--client-id", "app", "--token-url", "https://id.example/oauth/token",
            "--timeout",
            "\(timeout)",
        ]
    }

    private static let environment = ["PGPASSWORD": "not-used-1234", "OAUTH2_STORE_KEY": String(repeating: "ab", count: 32)]

    @Test func aDatabaseThatRefusesConnectionsIsAStoreErrorAtOnceNotAfterTheTimeout() async throws {
        let cli = try CLI()
        let port = try LoopbackSocket.closedPort()
        let started = ContinuousClock.now
        let result = try await cli.run(
            Self.tokenArguments(store: "postgresql://app@127.0.0.1:\(port)/tokens?sslmode=disable", timeout: 600),
            environment: Self.environment)
        let elapsed = ContinuousClock.now - started
        #expect(result.status == 1)
        #expect(result.errorLines.first?.hasPrefix("error: store_error: ") == true, "\(result.stderr)")
        #expect(result.stderr.contains("refused"), "\(result.stderr)")
        #expect(!result.stderr.contains("not-used-1234"))
        // The pool would retry for 600 s (--timeout); the CLI answers at once.
        // The bound is half the timeout, not a speed: a loaded machine under
        // ThreadSanitizer took 17.6 s to start the CLI and answer, and failed
        // a bound of 15 s against a timeout of 30.
        #expect(elapsed < .seconds(300), "took \(elapsed)")
    }

    @Test func anSslmodeWithoutTLSToANetworkHostIsAWarningOnStderr() async throws {
        let cli = try CLI()
        // TEST-NET-1 (RFC 5737): not loopback, and nothing answers there.
        let result = try await cli.run(
            Self.tokenArguments(store: "postgresql://app@192.0.2.1:5432/tokens?sslmode=prefer", timeout: 2),
            environment: Self.environment)
        #expect(result.status == 1)
        let warnings = result.stderr.split(separator: "\n").filter { $0.hasPrefix("warning: ") }
        #expect(warnings.count == 1, "\(result.stderr)")
        #expect(warnings.first?.contains("sslmode=prefer") == true)
        #expect(result.errorLines.first?.hasPrefix("error: store_error: ") == true, "\(result.stderr)")
    }
}
