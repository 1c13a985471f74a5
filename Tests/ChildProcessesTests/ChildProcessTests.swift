import ChildProcesses
import Foundation
import Glibc
import Synchronization
import Testing

/// How many times ``ChildProcessTests/aReadInterruptedBySignalsGoesOnToTheEnd()``'s
/// handler ran.
private let interruptions = Atomic<Int>(0)

/// The child processes the tests start their servers, the CLI and tools with.
@Suite struct ChildProcessTests {
    @Test func aChildsOutputErrorsAndExitStatusComeBackWhole() throws {
        let child = try ChildProcess(
            "/bin/sh", ["-c", "cat; echo out; echo err >&2; exit 3"], stdin: .pipe, stdout: .pipe, stderr: .pipe)
        try child.input?.write("in\n".utf8)
        child.input?.close()
        let output = String(decoding: try child.output?.readToEnd() ?? [], as: UTF8.self)
        let errors = String(decoding: try child.errors?.readToEnd() ?? [], as: UTF8.self)
        #expect(output == "in\nout\n")
        #expect(errors == "err\n")
        #expect(child.waitUntilExit() == .exited(3))
        #expect(!child.isRunning)
    }

    @Test func aSignalThatEndsTheChildIsReportedAsSuch() async throws {
        let child = try ChildProcess("/bin/sleep", ["30"])
        #expect(child.isRunning)
        child.send(SIGTERM)
        #expect(await child.exit() == .signalled(SIGTERM))
    }

    @Test func theChildInheritsNoDescriptorButItsThree() throws {
        // Opened without O_CLOEXEC, as a library the tests use might.
        let open = Glibc.open("/dev/null", O_RDONLY)
        try #require(open > 2)
        defer { close(open) }
        let child = try ChildProcess(
            "/bin/sh", ["-c", "[ -e /proc/$$/fd/\(open) ] && echo inherited || echo closed"], stdout: .pipe)
        #expect(String(decoding: try child.output?.readToEnd() ?? [], as: UTF8.self) == "closed\n")
        #expect(child.waitUntilExit() == .exited(0))
    }

    @Test func theChildRunsInTheDirectoryAndEnvironmentItIsGiven() throws {
        let child = try ChildProcess(
            "/bin/sh", ["-c", "pwd; echo \"$ONLY\"; env | wc -l"], environment: ["ONLY": "this"], directory: "/tmp",
            stdout: .pipe)
        let lines = String(decoding: try child.output?.readToEnd() ?? [], as: UTF8.self).split(separator: "\n")
        // sh adds PWD (and may add OLDPWD or SHLVL) to what it was given.
        #expect(lines.prefix(2) == ["/tmp", "this"])
        #expect((Int(String(lines.last?.filter { !$0.isWhitespace } ?? "")) ?? 99) <= 4)
        #expect(child.waitUntilExit() == .exited(0))
    }

    @Test func aProgramThatIsNotThereIsAnErrorNamingIt() {
        #expect {
            _ = try ChildProcess("/nonexistent/program", [], stdin: .pipe, stdout: .pipe, stderr: .pipe)
        } throws: { error in
            (error as? ChildProcessError)?.description == "posix_spawn /nonexistent/program: errno \(ENOENT)"
        }
    }

    /// What Foundation's `FileHandle.availableData` ends the process for.
    @Test func aReadInterruptedBySignalsGoesOnToTheEnd() async throws {
        // A handler without SA_RESTART: a blocked read(2) returns EINTR.
        var action = sigaction()
        action.__sigaction_handler.sa_handler = { _ in interruptions.add(1, ordering: .relaxed) }
        action.sa_flags = 0
        sigemptyset(&action.sa_mask)
        try #require(sigaction(SIGUSR1, &action, nil) == 0)
        // Writes nothing until its stdin has a line: the reader stays blocked until then.
        let child = try ChildProcess("/bin/sh", ["-c", "read line; echo late"], stdin: .pipe, stdout: .pipe)
        let reader = Mutex<pthread_t?>(nil)
        let read = Mutex<Result<[UInt8], ChildProcessError>?>(nil)
        let thread = Thread {
            // Threads started from the cooperative pool's block most signals.
            var usr1 = sigset_t()
            sigemptyset(&usr1)
            sigaddset(&usr1, SIGUSR1)
            pthread_sigmask(SIG_UNBLOCK, &usr1, nil)
            reader.withLock { $0 = pthread_self() }
            let result = Result { () throws(ChildProcessError) in try child.output?.readToEnd() ?? [] }
            read.withLock { $0 = result }
        }
        thread.start()
        let deadline = ContinuousClock.now + .seconds(60)
        while interruptions.load(ordering: .relaxed) < 5 && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
            if let thread = reader.withLock({ $0 }) { pthread_kill(thread, SIGUSR1) }
        }
        #expect(read.withLock { $0 == nil }, "the read ended before the child wrote")
        try child.input?.write("go\n".utf8)
        while read.withLock({ $0 == nil }) && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(try read.withLock { try $0?.get() } == Array("late\n".utf8))
        #expect(interruptions.load(ordering: .relaxed) >= 5, "the reader was not interrupted")
        #expect(await child.exit() == .exited(0))
    }

    @Test func aChildNeverWaitedForIsKilledAndReapedWhenReleased() throws {
        var child: ChildProcess? = try ChildProcess("/bin/sleep", ["30"])
        let pid = try #require(child?.pid)
        #expect(access("/proc/\(pid)", F_OK) == 0)
        child = nil
        // Neither running nor a zombie: its /proc entry is gone.
        #expect(access("/proc/\(pid)", F_OK) != 0)
    }
}
