import ChildProcesses
import Foundation
import OAuth2
import Testing

/// A process killed (SIGKILL) at every point of a save: before each step's
/// system call, in the middle of the write, after the rename and after the
/// save returned. Afterwards the account's file holds the old token or the
/// new one, whole, and never anything else; the lock the dead process held
/// is free; a later save works; and the temporary file the crash left is
/// ignored until it is stale, then removed when a store opens.
///
/// The process is StoreCrashChild (Tests/StoreCrashChild), built next to the
/// tests; it stops where it is told through the store's save hooks, so the
/// kill lands exactly there.
@Suite(.timeLimit(.minutes(5))) struct FileTokenStoreCrashTests {
    /// Where the child is killed, and what that must leave behind.
    struct StopPoint: Sendable, CustomTestStringConvertible {
        /// The child's argument: a save step (killed before its call), `write+<n>`, or `saved`.
        var argument: String
        /// Whether the rename happened: the file then holds the new token.
        var renamed: Bool
        /// Whether the save's temporary file exists at that point.
        var leavesTemporaryFile: Bool
        var testDescription: String { argument }
    }

    static let stopPoints = [
        StopPoint(argument: "createTemporaryFile", renamed: false, leavesTemporaryFile: false),
        StopPoint(argument: "setMode", renamed: false, leavesTemporaryFile: true),
        StopPoint(argument: "write", renamed: false, leavesTemporaryFile: true),
        StopPoint(argument: "write+1", renamed: false, leavesTemporaryFile: true),
        StopPoint(argument: "write+2048", renamed: false, leavesTemporaryFile: true),
        StopPoint(argument: "synchronizeFile", renamed: false, leavesTemporaryFile: true),
        StopPoint(argument: "closeFile", renamed: false, leavesTemporaryFile: true),
        StopPoint(argument: "rename", renamed: false, leavesTemporaryFile: true),
        StopPoint(argument: "synchronizeDirectory", renamed: true, leavesTemporaryFile: false),
        StopPoint(argument: "saved", renamed: true, leavesTemporaryFile: false),
    ]
    static let rounds = 3

    static let oldToken = AccessToken(
        accessToken: Secret("at-old-crash-test"),
        expiresAt: Date(timeIntervalSince1970: 1_800_000_000),
        refreshToken: Secret("rt-old-crash-test"),
        scopes: ["read"]
    )
    static let newAccessToken = "at-new-crash-test"
    static let newRefreshToken = "rt-new-crash-test"

    @Test func everyStepOfASaveHasAStopPoint() {
        let arguments = Set(Self.stopPoints.map(\.argument))
        for step in FileTokenStore.SaveStep.allCases {
            #expect(arguments.contains(step.rawValue), "no crash test stops before \(step)")
        }
    }

    @Test(arguments: stopPoints, [false, true])
    func aSaveKilledHereLeavesTheOldOrTheNewTokenWhole(point: StopPoint, encrypted: Bool) async throws {
        for _ in 0..<Self.rounds {
            let scratch = try Scratch()
            let keyText = encrypted ? (0..<32).map { _ in String(format: "%02x", UInt8.random(in: .min ... .max)) }.joined() : nil
            let encryption: FileTokenStore.Encryption =
                try keyText.map { .aesGCM(try FileTokenStore.EncryptionKey(text: $0)) } ?? .plaintext
            try await FileTokenStore(directory: scratch.store, encryption: encryption).save(Self.oldToken, account: "alice")

            let child = try await StoppedChild.start(
                [scratch.store, point.argument, Self.newAccessToken, Self.newRefreshToken],
                environment: keyText.map { ["STORE_CRASH_CHILD_KEY": $0] } ?? [:]
            )
            #expect(child.line == "stopped \(point.argument)")
            let ending = await child.kill()
            #expect(ending == .signalled(SIGKILL), "the child ended with \(ending), not SIGKILL")

            // A process started after the crash.
            let store = try FileTokenStore(directory: scratch.store, encryption: encryption)
            let loaded = try #require(try await store.load(account: "alice"))
            if point.renamed {
                #expect(loaded.accessToken == Secret(Self.newAccessToken))
                #expect(loaded.refreshToken == Secret(Self.newRefreshToken))
                #expect(loaded.extraFields["padding"] == .string(String(repeating: "p", count: 4096)))
            } else {
                #expect(loaded == Self.oldToken)
            }
            #expect(try scratch.temporaryFiles().count == (point.leavesTemporaryFile ? 1 : 0))

            // The kernel released the dead child's lock, and a fresh
            // temporary file (it could be a live save's) is left alone.
            try await store.withLock(account: "alice", timeout: .seconds(10)) { () async throws(OAuth2Error) in
                try await store.save(Self.oldToken.with(access: "at-later"), account: "alice")
            }
            #expect(try await store.load(account: "alice") == Self.oldToken.with(access: "at-later"))
            #expect(try scratch.temporaryFiles().count == (point.leavesTemporaryFile ? 1 : 0))

            // Once stale, it is removed by the next store to open.
            for name in try scratch.temporaryFiles() {
                try FileManager.default.setAttributes(
                    [.modificationDate: Date(timeIntervalSinceNow: -FileTokenStore.staleTemporaryFileAge.seconds - 60)],
                    ofItemAtPath: scratch.store + "/" + name
                )
            }
            _ = try FileTokenStore(directory: scratch.store, encryption: encryption)
            #expect(try scratch.entries() == ["alice.lock", "alice.token"])
        }
    }
}

extension AccessToken {
    func with(access: String) -> AccessToken {
        var token = self
        token.accessToken = Secret(access)
        return token
    }
}

extension Duration {
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}

/// A directory for one test, removed afterwards; the store lives in `tokens` inside it.
final class Scratch {
    let path: String
    var store: String { path + "/tokens" }

    init() throws {
        path = FileManager.default.temporaryDirectory.appendingPathComponent("oauth2-crash-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
    }

    deinit {
        try? FileManager.default.removeItem(atPath: path)
    }

    func entries() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: store).sorted()
    }

    /// The store's temporary files (`.<file>.<random>.tmp`).
    func temporaryFiles() throws -> [String] {
        try entries().filter { $0.hasPrefix(".") && $0.hasSuffix(".tmp") }
    }
}

/// StoreCrashChild, started and read until it says where it stopped.
///
/// Waiting on it never blocks a thread: the tests share Swift's few
/// cooperative threads (two on two cores), and a child that takes a while to
/// start, under ThreadSanitizer on a busy machine, would stall every other test.
final class StoppedChild {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    private let process: ChildProcess
    /// The line the child printed when it stopped.
    let line: String

    private init(process: ChildProcess, line: String) {
        self.process = process
        self.line = line
    }

    static func start(_ arguments: [String], environment: [String: String]) async throws -> StoppedChild {
        let process = try ChildProcess(
            try binary(), arguments, environment: ProcessInfo.processInfo.environment.merging(environment) { $1 },
            stdout: .pipe, stderr: .pipe)
        // The child prints its line, then waits; it cannot outlive its alarm (120 s).
        let fd = process.output?.number ?? -1
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        var bytes: [UInt8] = []
        var byte: UInt8 = 0
        while true {
            let count = read(fd, &byte, 1)
            if count == 1 {
                if byte == UInt8(ascii: "\n") { break }
                bytes.append(byte)
            } else if count < 0 && (errno == EAGAIN || errno == EINTR) {
                try await Task.sleep(for: .milliseconds(2))
            } else {
                break
            }
        }
        guard !bytes.isEmpty else {
            let ending = await process.exit()
            let stderr = String(decoding: (try? process.errors?.readToEnd()) ?? [], as: UTF8.self)
            throw Failure(description: "StoreCrashChild \(arguments[1]) ended with \(ending) without stopping: \(stderr)")
        }
        return StoppedChild(process: process, line: String(decoding: bytes, as: UTF8.self))
    }

    /// Kills the child with SIGKILL and waits for it; how it ended.
    func kill() async -> ChildProcess.Ending {
        process.send(SIGKILL)
        return await process.exit()
    }

    /// StoreCrashChild, in the directory of the test binary (the build's
    /// bin path): `swift build --build-tests` builds both.
    static func binary() throws -> String {
        let tests = Bundle.main.executableURL ?? URL(fileURLWithPath: CommandLine.arguments[0])
        let child = tests.deletingLastPathComponent().appendingPathComponent("StoreCrashChild").path
        guard FileManager.default.isExecutableFile(atPath: child) else {
            throw Failure(
                description:
                    "StoreCrashChild is not in \(tests.deletingLastPathComponent().path), beside the test binary: build it with `swift build --build-tests`"
            )
        }
        return child
    }
}
