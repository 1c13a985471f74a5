import ChildProcesses
import Foundation
import OAuth2
import Testing

/// Provider/op.py, the OpenID provider that behaves as the OpenID
/// Foundation's conformance suite does in each relying-party test module,
/// run as a child process for the whole test run.
///
/// It needs a Python with jwcrypto: `make test` passes the local provider's
/// (`OAUTH2_IT_CONFORMANCE_PYTHON`, .build/provider/venv/bin/python, which
/// scripts/provider-start.sh installs). Without it the suites are disabled,
/// visibly. The provider exits when its stdin closes, so it cannot outlive
/// the test process.
final class ConformanceProvider: Sendable {
    static let pythonVariable = "OAUTH2_IT_CONFORMANCE_PYTHON"

    /// Why the suites cannot run here, for `.enabled(if:)`.
    static let requirement: Comment =
        "needs a Python with jwcrypto for the conformance provider: `make test` sets OAUTH2_IT_CONFORMANCE_PYTHON to the local provider's"

    static var isConfigured: Bool { ProcessInfo.processInfo.environment[pythonVariable] != nil }

    /// The provider of this test run, started by the first test that needs it.
    static let shared: Result<ConformanceProvider, any Error> = Result { try ConformanceProvider() }

    let port: Int
    /// The throw-away CA and client certificate of op.py's mutual TLS port.
    let tls: TLSFiles
    /// Kept for its stdin, which closes with the test process.
    private let process: ChildProcess

    private init() throws {
        guard let python = ProcessInfo.processInfo.environment[Self.pythonVariable] else {
            throw ConformanceProviderError.notConfigured
        }
        let script = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent()
            .deletingLastPathComponent()
            .appendingPathComponent("Provider/op.py")
        let process = try ChildProcess(python, [script.path], stdin: .pipe, stdout: .pipe)
        let line = try process.output?.readLine() ?? ""
        let words = line.split(whereSeparator: \.isWhitespace)
        guard words.count == 4, words[0] == "READY", let port = Int(words[1]), Int(words[2]) != nil else {
            throw ConformanceProviderError.didNotStart(line)
        }
        self.port = port
        self.tls = TLSFiles(folder: String(words[3]))
        self.process = process
    }

    /// A fresh run of `module`: an issuer of its own (a new test alias, as
    /// the suite gives each run), so tests running at once share nothing.
    static func run(_ module: String) throws -> ModuleRun {
        let provider = try shared.get()
        let alias = "run-" + UUID().uuidString.prefix(8).lowercased()
        return ModuleRun(module: module, issuer: "http://127.0.0.1:\(provider.port)/\(alias)/\(module)", tls: provider.tls)
    }
}

/// The files op.py made for its mutual TLS port: the CA that issued its
/// server certificate, and a client certificate the same CA issued to the
/// client (subject CN `oidf-rp`, for `tls_client_auth`).
struct TLSFiles: Sendable {
    let folder: String
    var caFile: String { folder + "/ca.pem" }
    var clientCertificateFile: String { folder + "/client.pem" }
    var clientKeyFile: String { folder + "/client.key" }
}

enum ConformanceProviderError: Error, CustomStringConvertible {
    case notConfigured
    case didNotStart(String)
    case noRedirect(status: Int)

    var description: String {
        switch self {
        case .notConfigured: ConformanceProvider.requirement.rawValue
        case .didNotStart(let line): "op.py did not start; it printed: \(line)"
        case .noRedirect(let status): "the authorization endpoint answered \(status), not a redirect to the client"
        }
    }
}
