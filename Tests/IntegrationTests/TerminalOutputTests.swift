import Foundation
import OAuth2
import Testing

/// The device flow's wait: a countdown redrawn on a terminal, one plain line
/// when stderr is not a terminal or NO_COLOR is set. `script` gives the CLI a
/// terminal (its output, stdout and stderr merged, is script's stdout).
@Suite(.enabled(if: Provider.mainIsConfigured, "needs the local provider: `make test` starts it and sets OAUTH2_IT_PROVIDER"))
struct TerminalOutputTests {
    static let escape = "\u{1B}"

    /// Runs `oauth2 device` (under `script` when `terminal`), approves it, and returns what it wrote to stderr (or the terminal).
    static func deviceFlow(terminal: Bool, environment: [String: String] = [:]) async throws -> Subprocess.Result {
        let provider = try Provider.main()
        let cli = try CLI()
        cli.environment["TERM"] = "xterm"
        cli.environment.removeValue(forKey: "NO_COLOR")
        let arguments = ["device"] + (try provider.options(client: "device", for: cli))
        let command: Subprocess
        if terminal {
            let line = ([try CLI.binary()] + arguments).map { "'" + $0.replacingOccurrences(of: "'", with: #"'\''"#) + "'" }
                .joined(separator: " ")
            command = try Subprocess(
                "/usr/bin/script", ["-qfec", line, "/dev/null"], environment: cli.environment.merging(environment) { $1 })
        } else {
            command = try cli.start(arguments, environment: environment)
        }
        let prefix = "Or open this address, which carries the code: "
        let complete = try await terminal ? command.stdoutLine(startingWith: prefix) : command.stderrLine(startingWith: prefix)
        // Long enough for a few redraws of the countdown.
        try await Task.sleep(for: .milliseconds(2500))
        try await provider.approveDevice(complete.trimmingCharacters(in: .whitespacesAndNewlines))
        let result = try await command.wait()
        #expect(result.status == 0, "\(result.stdout) \(result.stderr)")
        return terminal ? Subprocess.Result(status: result.status, stdout: "", stderr: result.stdout) : result
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/script"), "needs script(1) for a terminal"))
    func aTerminalGetsACountdown() async throws {
        let output = try await Self.deviceFlow(terminal: true).stderr
        #expect(output.contains("\r\(Self.escape)[2KWaiting for approval… the code expires in "), "\(output.debugDescription)")
        #expect(output.components(separatedBy: "Waiting for approval…").count > 2, "redrawn more than once")
        #expect(output.contains("Approved. "))
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/script"), "needs script(1) for a terminal"))
    func noColorOnATerminalGetsOnePlainLine() async throws {
        let output = try await Self.deviceFlow(terminal: true, environment: ["NO_COLOR": "1"]).stderr
        #expect(!output.contains(Self.escape), "\(output.debugDescription)")
        #expect(output.components(separatedBy: "Waiting for approval").count == 2)
        #expect(output.contains("Waiting for approval (the code expires in "))
    }

    @Test func aPipeGetsOnePlainLine() async throws {
        let output = try await Self.deviceFlow(terminal: false).stderr
        #expect(!output.contains(Self.escape) && !output.contains("\r"), "\(output.debugDescription)")
        #expect(output.components(separatedBy: "Waiting for approval").count == 2)
        #expect(!output.contains("..."))
    }
}
