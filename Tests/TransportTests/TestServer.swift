import ChildProcesses
import Foundation
import OAuth2
import Testing

/// The Python test server (Server/test_server.py), run as a child process.
///
/// It serves plain HTTP and HTTPS (a throw-away CA) on 127.0.0.1 and exits
/// when its stdin closes, so it cannot outlive the test process.
final class TestServer: Sendable {
    let httpPort: Int
    let httpsPort: Int
    /// The PEM file of the CA that signed the HTTPS server's certificate.
    let caFile: String
    /// An HTTPS port whose certificate the same CA issued for `other.invalid` only.
    let misnamedHTTPSPort: Int
    private let process: ChildProcess

    /// The server of the running suite (see ``TestServerTrait``).
    @TaskLocal static var current: TestServer?

    private init(httpPort: Int, httpsPort: Int, caFile: String, misnamedHTTPSPort: Int, process: ChildProcess) {
        self.httpPort = httpPort
        self.httpsPort = httpsPort
        self.caFile = caFile
        self.misnamedHTTPSPort = misnamedHTTPSPort
        self.process = process
    }

    /// Starts the server and waits for its READY line.
    static func start() throws -> TestServer {
        let script = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent()
            .appendingPathComponent("Server/test_server.py")
        let process = try ChildProcess("/usr/bin/env", ["python3", script.path], stdin: .pipe, stdout: .pipe)
        let line = try process.output?.readLine() ?? ""
        let words = line.split(separator: " ")
        guard words.count == 5, words[0] == "READY", let http = Int(words[1]), let https = Int(words[2]), let misnamed = Int(words[4])
        else {
            // Released here: killed and reaped.
            throw TestServerError.didNotStart(line)
        }
        return TestServer(
            httpPort: http, httpsPort: https, caFile: String(words[3]), misnamedHTTPSPort: misnamed, process: process)
    }

    /// Closes the server's stdin (it exits by itself) and waits for it.
    func stop() {
        process.input?.close()
        process.waitUntilExit()
    }

    /// A plain-HTTP URL on the server.
    func url(_ pathAndQuery: String) throws -> URL {
        try #require(URL(string: "http://127.0.0.1:\(httpPort)\(pathAndQuery)"))
    }

    /// An HTTPS URL on the server, for host `127.0.0.1` or `localhost`.
    func secureURL(_ pathAndQuery: String, host: String = "127.0.0.1") throws -> URL {
        try #require(URL(string: "https://\(host):\(httpsPort)\(pathAndQuery)"))
    }

    /// An HTTPS URL on the port whose certificate names `other.invalid`, not `host`.
    func misnamedURL(_ pathAndQuery: String, host: String = "127.0.0.1") throws -> URL {
        try #require(URL(string: "https://\(host):\(misnamedHTTPSPort)\(pathAndQuery)"))
    }
}

enum TestServerError: Error {
    case didNotStart(String)
    case gaveUpWaiting(String)
}

/// Runs a suite with one test server, started before its first test and stopped after its last.
struct TestServerTrait: SuiteTrait, TestScoping {
    func provideScope(
        for test: Test,
        testCase: Test.Case?,
        performing function: @Sendable () async throws -> Void
    ) async throws {
        let server = try TestServer.start()
        defer { server.stop() }
        try await TestServer.$current.withValue(server) {
            try await function()
        }
    }
}

extension Trait where Self == TestServerTrait {
    /// One test server for the whole suite, reachable as `TestServer.current`.
    static var testServer: Self { Self() }
}
