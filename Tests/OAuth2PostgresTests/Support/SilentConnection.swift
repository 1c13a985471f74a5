import ChildProcesses
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Every packet of one loopback TCP connection dropped, both ways, by an
/// nftables table of its own (removed by ``end()``): the connection goes
/// silent, as one to a machine that died does, while everything else on the
/// machine goes on.
///
/// The rules match the connection's two ports together, never one alone:
/// Linux gives a client port that is in use to new connections to other
/// destinations too, so a rule on the client port alone also dropped the
/// connects of tests running beside this one (a libcurl or PostgreSQL
/// connect then hung for its whole 10 s timeout).
final class SilentConnection: @unchecked Sendable { // `ended` is under `lock`
    private let table: String
    private let lock = NSLock()
    private var ended = false

    static let nft = ["/usr/sbin/nft", "/sbin/nft", "/usr/bin/nft"].first { FileManager.default.isExecutableFile(atPath: $0) }
    static var isAvailable: Bool { getuid() == 0 && nft != nil && TestDatabase.isConfigured }

    /// - Parameters:
    ///   - port: the connection's client port.
    ///   - serverPort: the port it is connected to.
    init(port: Int, serverPort: Int) throws {
        table = "oauth2_silent_\(port)_\(UInt32.random(in: 0...UInt32.max))"
        try Self.run(["add", "table", "inet", table])
        do {
            try Self.run(["add", "chain", "inet", table, "input", "{ type filter hook input priority -10 ; policy accept ; }"])
            try Self.run(["add", "rule", "inet", table, "input", "tcp", "sport", "\(port)", "tcp", "dport", "\(serverPort)", "drop"])
            try Self.run(["add", "rule", "inet", table, "input", "tcp", "sport", "\(serverPort)", "tcp", "dport", "\(port)", "drop"])
        } catch {
            end()
            throw error
        }
    }

    /// Lets the port's packets through again.
    func end() {
        let first = lock.withLock {
            defer { ended = true }
            return !ended
        }
        if first {
            try? Self.run(["delete", "table", "inet", table])
        }
    }

    private static func run(_ arguments: [String]) throws {
        guard let nft else { throw TestDatabaseError(description: "nft is not installed") }
        let ending = try ChildProcess(nft, arguments).waitUntilExit()
        guard ending == .exited(0) else {
            throw TestDatabaseError(description: "nft \(arguments.joined(separator: " ")) failed (\(ending))")
        }
    }
}
