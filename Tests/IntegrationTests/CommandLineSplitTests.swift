import Foundation
import Testing

/// `oauth2` starts without SwiftNIO, full Foundation or ICU (issue 15: a
/// credential helper runs it for every request); a command with a PostgreSQL
/// store goes on in `oauth2-postgres` beside it (PostgresDeploymentTests run
/// the PostgreSQL store through `oauth2` that way).
@Suite struct CommandLineSplitTests {
    @Test func theCLILinksNeitherFullFoundationNorICUNorSwiftNIONorLibcurl() async throws {
        let binary = try CLI.binary()
        let ldd = try await Subprocess.run("/usr/bin/ldd", [binary], environment: ProcessInfo.processInfo.environment)
        #expect(ldd.status == 0, "\(ldd.stderr)")
        #expect(!ldd.stdout.isEmpty)
        // libcurl neither: the transport opens it when it first sends (CCurl.h).
        let unwanted = [
            "libFoundation.so", "libFoundationInternationalization.so", "lib_FoundationICU.so", "libFoundationNetworking.so", "libcurl",
        ]
        for library in unwanted {
            #expect(!ldd.stdout.contains(library), "oauth2 loads \(library)")
        }
        let symbols = try await Subprocess.run("/usr/bin/nm", ["--defined-only", binary], environment: ProcessInfo.processInfo.environment)
        #expect(symbols.status == 0, "\(symbols.stderr)")
        #expect(!symbols.stdout.contains("PostgresNIO"), "oauth2 contains the PostgreSQL driver")
        #expect(!symbols.stdout.contains("8NIOPosix"), "oauth2 contains SwiftNIO")
    }

    @Test func aPostgreSQLStoreWithoutOAuth2PostgresBesideItIsAUsageErrorThatSaysSo() async throws {
        let cli = try CLI()
        let alone = cli.directory + "/bin"
        try FileManager.default.createDirectory(atPath: alone, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: try CLI.binary(), toPath: alone + "/oauth2")
        let result = try await Subprocess.run(
            alone + "/oauth2",
            ["token", "--store", "postgresql://app@127.0.0.1:9/tokens", "--client-id", "app", "--token-url", "http://127.0.0.1:9/token"],
            environment: cli.environment.merging(["PGPASSWORD": "pg-password-never-shown"]) { $1 }
        )
        #expect(result.status == 64)
        #expect(result.errorLines.count == 1)
        #expect(result.stderr.contains("no oauth2-postgres beside it (\(alone))"), "\(result.stderr)")
        #expect(!result.stderr.contains("pg-password-never-shown"))
    }
}
