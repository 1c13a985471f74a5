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
        try Self.copyExecutable(try CLI.binary(), to: alone + "/oauth2")
        let result = try await Self.runJustWritten(
            alone + "/oauth2",
            ["token", "--store", "postgresql://app@127.0.0.1:9/tokens", "--client-id", "app", "--token-url", "http://127.0.0.1:9/token"],
            environment: cli.environment.merging(["PGPASSWORD": "pg-password-never-shown"]) { $1 }
        )
        #expect(result.status == 64)
        #expect(result.errorLines.count == 1)
        #expect(result.stderr.contains("no oauth2-postgres beside it (\(alone))"), "\(result.stderr)")
        #expect(!result.stderr.contains("pg-password-never-shown"))
    }

    /// Copies an executable through a descriptor that no child process
    /// inherits (`O_CLOEXEC`). Other tests start processes all the while, and
    /// a child forked while a copy's descriptor is open keeps the file open
    /// for writing, so running it fails with "Text file busy" (`ETXTBSY`).
    /// FileManager's copy does not say how it opens the file.
    static func copyExecutable(_ source: String, to destination: String) throws {
        let bytes = try Data(contentsOf: URL(fileURLWithPath: source))
        let descriptor = open(destination, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o755)
        guard descriptor >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        defer { close(descriptor) }
        try FileHandle(fileDescriptor: descriptor, closeOnDealloc: false).write(contentsOf: bytes)
    }

    /// Runs an executable written moments ago. A child another test forks
    /// while the copy's descriptor is open holds it until that child execs
    /// (microseconds, with `O_CLOEXEC`), and meanwhile the kernel refuses to
    /// run the file (`ETXTBSY`): that refusal is retried for up to 5 s.
    static func runJustWritten(
        _ executable: String,
        _ arguments: [String],
        environment: [String: String]
    ) async throws -> Subprocess.Result {
        let deadline = ContinuousClock.now + .seconds(5)
        while true {
            do {
                return try await Subprocess.run(executable, arguments, environment: environment)
            } catch let error as NSError where error.isTextFileBusy && ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
            }
        }
    }
}

extension NSError {
    /// Whether this error, or the POSIX error under it, is `ETXTBSY`.
    fileprivate var isTextFileBusy: Bool {
        if domain == NSPOSIXErrorDomain, code == Int(ETXTBSY) { return true }
        return (userInfo[NSUnderlyingErrorKey] as? NSError)?.isTextFileBusy ?? false
    }
}
