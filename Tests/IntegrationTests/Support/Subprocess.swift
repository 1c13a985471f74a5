import ChildProcesses
import Foundation
import OAuth2

/// A child process with piped stdin, stdout and stderr, read by threads of
/// their own so that a chatty child never blocks on a full pipe.
///
/// Every wait has a deadline: a child that outlives it is killed and the
/// wait throws, so a stuck CLI fails its test instead of hanging the suite.
final class Subprocess {
    /// What a finished child left behind.
    struct Result {
        var status: Int32
        var stdout: String
        var stderr: String

        /// The stderr lines that start with `error: `.
        var errorLines: [String] {
            stderr.split(separator: "\n").map(String.init).filter { $0.hasPrefix("error: ") }
        }
    }

    /// A wait that ran out of time; it names the command and what it printed.
    struct Timeout: Error, CustomStringConvertible {
        let description: String
    }

    let command: String
    private let process: ChildProcess
    private let output = LockedValue<[UInt8]>([])
    private let errors = LockedValue<[UInt8]>([])
    private let readers = DispatchGroup()

    /// Starts `executable` with `arguments`, the environment `environment` (the whole of it).
    init(_ executable: String, _ arguments: [String], environment: [String: String]) throws {
        command = ([executable] + arguments).map { $0.count > 80 ? String($0.prefix(77)) + "…" : $0 }.joined(separator: " ")
        process = try ChildProcess(executable, arguments, environment: environment, stdin: .pipe, stdout: .pipe, stderr: .pipe)
        if let stdout = process.output { Self.drain(stdout, into: output, group: readers) }
        if let stderr = process.errors { Self.drain(stderr, into: errors, group: readers) }
    }

    /// Runs a command to its end, feeding it `input`.
    static func run(
        _ executable: String,
        _ arguments: [String],
        environment: [String: String],
        input: String? = nil,
        timeout: Duration = .seconds(60)
    ) async throws -> Result {
        let child = try Subprocess(executable, arguments, environment: environment)
        if let input { child.write(input) }
        child.closeInput()
        return try await child.wait(timeout: timeout)
    }

    /// What the child wrote to stdout so far.
    var stdout: String { String(decoding: output.withLock { $0 }, as: UTF8.self) }

    /// What the child wrote to stderr so far.
    var stderr: String { String(decoding: errors.withLock { $0 }, as: UTF8.self) }

    /// Writes to the child's stdin.
    func write(_ text: String) {
        try? process.input?.write(text.utf8)
    }

    /// Closes the child's stdin (it reads end of input).
    func closeInput() {
        process.input?.close()
    }

    /// The first line of stdout, once the child has written it.
    func firstLineOfStdout(timeout: Duration = .seconds(30)) async throws -> String {
        try await poll(timeout: timeout, waitingFor: "a first line on stdout") {
            let text = stdout
            guard let newline = text.firstIndex(of: "\n") else { return nil }
            return String(text[..<newline])
        }
    }

    /// The first stderr line that starts with `prefix`, without the prefix.
    func stderrLine(startingWith prefix: String, timeout: Duration = .seconds(30)) async throws -> String {
        try await poll(timeout: timeout, waitingFor: "a stderr line starting with \"\(prefix)\"") {
            stderr.split(separator: "\n").first { $0.hasPrefix(prefix) }.map { String($0.dropFirst(prefix.count)) }
        }
    }

    /// The first stdout line that starts with `prefix`, without the prefix
    /// (for a child under script(1), whose terminal output is its stdout).
    func stdoutLine(startingWith prefix: String, timeout: Duration = .seconds(30)) async throws -> String {
        try await poll(timeout: timeout, waitingFor: "a stdout line starting with \"\(prefix)\"") {
            stdout.split(whereSeparator: { $0 == "\n" || $0 == "\r\n" }).first { $0.hasPrefix(prefix) }.map {
                String($0.dropFirst(prefix.count))
            }
        }
    }

    /// Whether the child is still running.
    var isRunning: Bool { process.isRunning }

    /// Kills the child with SIGKILL, as the OOM killer or `kill -9` would, and waits for it.
    func killHard() async throws -> Result {
        process.send(SIGKILL)
        return try await wait(timeout: .seconds(10))
    }

    /// Waits for the child to exit and for its output to be read.
    func wait(timeout: Duration = .seconds(60)) async throws -> Result {
        _ = try await poll(timeout: timeout, waitingFor: "the process to exit") { process.isRunning ? nil : true }
        // The pipes close when the child (and any child of its) exits.
        _ = try await poll(timeout: .seconds(10), waitingFor: "the end of its output") {
            readers.wait(timeout: .now()) == .success ? true : nil
        }
        // As Foundation's Process gave it: the exit status, or the signal that ended the child.
        let status: Int32 =
            switch process.ended {
            case .exited(let status): status
            case .signalled(let signal): signal
            case nil: -1
            }
        return Result(status: status, stdout: stdout, stderr: stderr)
    }

    private func poll<Value>(timeout: Duration, waitingFor what: String, _ check: () -> Value?) async throws -> Value {
        let deadline = ContinuousClock.now + timeout
        while true {
            if let value = check() { return value }
            guard ContinuousClock.now < deadline else {
                if process.isRunning {
                    process.send(SIGTERM)
                    try? await Task.sleep(for: .milliseconds(500))
                    process.send(SIGKILL)
                }
                throw Timeout(
                    description: "timed out after \(timeout) waiting for \(what): \(command)\nstdout: \(stdout)\nstderr: \(stderr)")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    private static func drain(_ descriptor: Descriptor, into buffer: LockedValue<[UInt8]>, group: DispatchGroup) {
        group.enter()
        let thread = Thread {
            while let data = try? descriptor.readSome(), !data.isEmpty {
                buffer.withLock { $0.append(contentsOf: data) }
            }
            group.leave()
        }
        thread.start()
    }
}
