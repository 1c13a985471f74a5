import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A PostgreSQL cluster of scripts/postgres.sh: the one `make test` runs
/// (`main`, described by OAUTH2_IT_POSTGRES_URL and _PASSWORD_FILE), or one a
/// test starts and stops for itself, to restart it without disturbing others.
struct Database: Sendable {
    let name: String
    let url: String
    let password: String

    static let isConfigured = !(ProcessInfo.processInfo.environment["OAUTH2_IT_POSTGRES_URL"] ?? "").isEmpty

    static let script = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("scripts/postgres.sh").path

    /// The cluster `make test` started.
    static func main() throws -> Database {
        let environment = ProcessInfo.processInfo.environment
        guard let url = environment["OAUTH2_IT_POSTGRES_URL"], !url.isEmpty,
            let passwordFile = environment["OAUTH2_IT_POSTGRES_PASSWORD_FILE"]
        else {
            throw ProviderError(description: "OAUTH2_IT_POSTGRES_URL is not set: `make test` starts PostgreSQL")
        }
        return Database(name: "main", url: url, password: try Self.read(passwordFile))
    }

    /// Starts a cluster of its own under `name`.
    static func start(name: String) async throws -> Database {
        try await control(name, "start")
        let root = URL(fileURLWithPath: script).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent(".build/postgres/\(name)").path
        let environment =
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: root + "/env.json"))) as? [String: String]
        guard let url = environment?["url"], let passwordFile = environment?["password_file"] else {
            throw ProviderError(description: "scripts/postgres.sh wrote no usable env.json for \(name)")
        }
        return Database(name: name, url: url, password: try Self.read(passwordFile))
    }

    /// Stops the server and removes its data.
    func stop() async throws { try await Self.control(name, "stop") }
    /// Stops the server, keeping its data for ``restart()``.
    func halt() async throws { try await Self.control(name, "halt") }
    func restart() async throws { try await Self.control(name, "restart") }

    /// Runs `scripts/postgres.sh --name NAME COMMAND`, its output to the test's.
    ///
    /// With posix_spawn and waitpid, not ``Subprocess``: Foundation's
    /// `Process` was seen not to reap this script (a zombie it kept calling
    /// running), perhaps because the server it starts outlives it.
    private static func control(_ name: String, _ command: String) async throws {
        let arguments = [script, "--name", name, command]
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, script, nil, nil, &argv, environ)
        guard spawned == 0 else {
            throw ProviderError(description: "could not start scripts/postgres.sh: errno \(spawned)")
        }
        let deadline = ContinuousClock.now + .seconds(120)
        var status: Int32 = 0
        while true {
            let reaped = waitpid(pid, &status, WNOHANG)
            if reaped == pid { break }
            if reaped == -1 && errno == ECHILD { return } // reaped by someone else: it did exit
            guard ContinuousClock.now < deadline else {
                kill(pid, SIGKILL)
                throw ProviderError(description: "scripts/postgres.sh --name \(name) \(command) did not finish in 120 s")
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        // WIFEXITED and WEXITSTATUS, which Swift does not import.
        guard status & 0x7f == 0, (status >> 8) & 0xff == 0 else {
            throw ProviderError(description: "scripts/postgres.sh --name \(name) \(command) failed (wait status \(status))")
        }
    }

    private static func read(_ path: String) throws -> String {
        try String(contentsOfFile: path, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

extension CLI {
    /// A CLI whose `--store` is a table of its own in `database`, encrypted
    /// with a key of its own; the password goes in PGPASSWORD.
    convenience init(database: Database) throws {
        try self.init()
        store = database.url + "?sslmode=disable"
        environment["PGPASSWORD"] = database.password
        environment["OAUTH2_STORE_TABLE"] = "it_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(24)
        environment["OAUTH2_STORE_KEY"] = (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
    }
}
