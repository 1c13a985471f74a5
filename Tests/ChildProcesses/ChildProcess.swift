import CChildProcess
import Glibc
import Synchronization

/// Why a child could not be started: the call that failed and its errno.
public struct ChildProcessError: Error, CustomStringConvertible {
    /// `posix_spawn /usr/bin/python3: errno 2`.
    public let description: String
}

/// A child process started with `posix_spawn(3)`: what the tests start their
/// servers, the CLI and small tools with.
///
/// Not Foundation's `Process`, for two defects of the Foundation that Swift
/// 6.3.1 ships, both of which ended a whole test run:
/// - `Process.run()` finds the highest open descriptor by reading
///   `/proc/self/fd` and copying each entry's full 256-byte `d_name`, past
///   the end of glibc's buffer; with 1,300 or more descriptors open (the
///   suite holds about 1,600 at its busiest) the copy can cross into an
///   unmapped page and the test process dies of SIGSEGV
///   (swift-corelibs-foundation #5472, fixed after 6.3.1).
/// - `FileHandle.availableData` and `readDataToEndOfFile()` call
///   `fatalError` on any failed read, EINTR included.
///
/// The child gets the descriptors it is given as 0, 1 and 2 and no other
/// (every other descriptor is closed in it), default signal dispositions
/// and an empty signal mask. A child that is never waited for is killed and
/// reaped when its `ChildProcess` is released, so none outlives its test as
/// a zombie or an orphan.
public final class ChildProcess: Sendable {
    /// What one of the child's standard streams is connected to.
    public enum Stream: Sendable {
        /// `/dev/null`.
        case null
        /// A pipe whose other end this object holds (``input``, ``output``, ``errors``).
        case pipe
        /// The test process's own descriptor of that number.
        case inherit
    }

    /// How the child ended.
    public enum Ending: Equatable, Sendable, CustomStringConvertible {
        /// It exited with this status.
        case exited(Int32)
        /// A signal ended it.
        case signalled(Int32)

        public var description: String {
            switch self {
            case .exited(let status): "exit status \(status)"
            case .signalled(let signal): "signal \(signal)"
            }
        }
    }

    /// The child's process ID.
    public let pid: pid_t
    /// The write end of the child's stdin when it is ``Stream/pipe``.
    public let input: Descriptor?
    /// The read end of the child's stdout when it is ``Stream/pipe``.
    public let output: Descriptor?
    /// The read end of the child's stderr when it is ``Stream/pipe``.
    public let errors: Descriptor?
    private let ending = Mutex<Ending?>(nil)

    /// Starts `executable` (a path; no search of `PATH`) with `arguments`.
    ///
    /// - Parameters:
    ///   - environment: the child's whole environment; `nil` passes the test process's own.
    ///   - directory: the child's working directory; `nil` keeps the test process's.
    /// - Throws: ``ChildProcessError`` naming the call that failed.
    public init(
        _ executable: String,
        _ arguments: [String],
        environment: [String: String]? = nil,
        directory: String? = nil,
        stdin: Stream = .null,
        stdout: Stream = .inherit,
        stderr: Stream = .inherit
    ) throws(ChildProcessError) {
        var childEnds: [Int32] = []
        var parentEnds: [Int32?] = [nil, nil, nil]
        var actions = posix_spawn_file_actions_t()
        var attributes = posix_spawnattr_t()
        posix_spawn_file_actions_init(&actions)
        posix_spawnattr_init(&attributes)
        defer {
            posix_spawn_file_actions_destroy(&actions)
            posix_spawnattr_destroy(&attributes)
            for fd in childEnds { close(fd) }
        }
        do throws(ChildProcessError) {
            for (target, stream) in [stdin, stdout, stderr].enumerated() {
                let target = Int32(target)
                switch stream {
                case .inherit:
                    continue
                case .null:
                    let fd = open("/dev/null", (target == 0 ? O_RDONLY : O_WRONLY) | O_CLOEXEC)
                    guard fd >= 0 else { throw ChildProcessError(description: "open /dev/null: errno \(errno)") }
                    childEnds.append(fd)
                    posix_spawn_file_actions_adddup2(&actions, fd, target)
                case .pipe:
                    var ends: [Int32] = [-1, -1]
                    guard c_child_process_pipe(&ends) == 0 else { throw ChildProcessError(description: "pipe2: errno \(errno)") }
                    let (childEnd, parentEnd) = target == 0 ? (ends[0], ends[1]) : (ends[1], ends[0])
                    childEnds.append(childEnd)
                    parentEnds[Int(target)] = parentEnd
                    posix_spawn_file_actions_adddup2(&actions, childEnd, target)
                }
            }
            // dup2 clears close-on-exec on 0, 1 and 2; everything above them is closed,
            // whatever another thread opened without O_CLOEXEC.
            let closing = c_child_process_addclosefrom(&actions, 3)
            guard closing == 0 else { throw ChildProcessError(description: "addclosefrom: errno \(closing)") }
            if let directory {
                let status = c_child_process_addchdir(&actions, directory)
                guard status == 0 else { throw ChildProcessError(description: "chdir \(directory): errno \(status)") }
            }
            var all = sigset_t()
            sigfillset(&all)
            var none = sigset_t()
            sigemptyset(&none)
            posix_spawnattr_setsigdefault(&attributes, &all)
            posix_spawnattr_setsigmask(&attributes, &none)
            posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))

            var pid: pid_t = 0
            let status = Self.withCStrings([executable] + arguments) { argv in
                if let environment {
                    return Self.withCStrings(environment.map { $0.key + "=" + $0.value }) { envp in
                        posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
                    }
                }
                return posix_spawn(&pid, executable, &actions, &attributes, argv, environ)
            }
            guard status == 0 else { throw ChildProcessError(description: "posix_spawn \(executable): errno \(status)") }
            self.pid = pid
        } catch {
            for case let fd? in parentEnds { close(fd) }
            throw error
        }
        input = parentEnds[0].map(Descriptor.init)
        output = parentEnds[1].map(Descriptor.init)
        errors = parentEnds[2].map(Descriptor.init)
    }

    deinit {
        if ending.withLock({ $0 }) == nil {
            kill(pid, SIGKILL)
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        }
    }

    /// How the child ended, or `nil` while it runs (reaps it once it has).
    public var ended: Ending? {
        ending.withLock { ending in
            if let ending { return ending }
            var status: Int32 = 0
            var reaped: pid_t
            repeat { reaped = waitpid(pid, &status, WNOHANG) } while reaped < 0 && errno == EINTR
            guard reaped == pid else { return nil }
            // WIFEXITED / WEXITSTATUS / WTERMSIG, which Swift does not import.
            let signal = status & 0x7f
            ending = signal == 0 ? .exited((status >> 8) & 0xff) : .signalled(signal)
            return ending
        }
    }

    /// Whether the child is still running.
    public var isRunning: Bool { ended == nil }

    /// Sends `signal` to the child, unless it has been reaped (its PID may be another's by then).
    public func send(_ signal: Int32) {
        ending.withLock { ending in
            if ending == nil { _ = kill(pid, signal) }
        }
    }

    /// Waits for the child to end, blocking the calling thread.
    @discardableResult
    public func waitUntilExit() -> Ending {
        while true {
            if let ended { return ended }
            usleep(5_000)
        }
    }

    /// Waits for the child to end without holding a thread.
    @discardableResult
    public func exit() async -> Ending {
        while true {
            if let ended { return ended }
            try? await Task.sleep(for: .milliseconds(5))
        }
    }

    private static func withCStrings<Result>(
        _ strings: [String], _ body: (UnsafePointer<UnsafeMutablePointer<CChar>?>) -> Result
    ) -> Result {
        let copies = strings.map { strdup($0) }
        defer { for copy in copies { free(copy) } }
        return (copies + [nil]).withUnsafeBufferPointer { body($0.baseAddress!) }
    }
}

/// A descriptor this process owns and closes when it is released or
/// ``close()``d: one end of a pipe to a child.
///
/// Reads and writes go on through EINTR.
public final class Descriptor: Sendable {
    private let fd: Mutex<Int32>

    /// Takes ownership of `fd`.
    public init(_ fd: Int32) {
        self.fd = Mutex(fd)
    }

    deinit {
        close()
    }

    /// The descriptor's number (-1 once closed), for `poll(2)` or `fcntl(2)`.
    public var number: Int32 { fd.withLock { $0 } }

    /// Closes it; later reads see end of file and writes fail.
    public func close() {
        let closing = fd.withLock { fd in
            defer { fd = -1 }
            return fd
        }
        if closing >= 0 { _ = Glibc.close(closing) }
    }

    /// What one read returns: up to 64 KiB, empty at end of file or once closed.
    ///
    /// - Throws: ``ChildProcessError`` for a read that failed other than by EINTR
    ///   (EAGAIN, on a descriptor made non-blocking, included).
    public func readSome() throws(ChildProcessError) -> [UInt8] {
        let fd = number
        guard fd >= 0 else { return [] }
        var buffer = [UInt8](repeating: 0, count: 65536)
        var count: Int
        repeat { count = read(fd, &buffer, buffer.count) } while count < 0 && errno == EINTR
        guard count >= 0 else { throw ChildProcessError(description: "read: errno \(errno)") }
        return Array(buffer.prefix(count))
    }

    /// Everything up to end of file.
    public func readToEnd() throws(ChildProcessError) -> [UInt8] {
        var all: [UInt8] = []
        while true {
            let more = try readSome()
            if more.isEmpty { return all }
            all += more
        }
    }

    /// Reads until a newline (returned without it) or end of file (what came
    /// before it); what the same read brought after the newline is dropped,
    /// so this is for a child's first line, such as a server's `READY`.
    public func readLine() throws(ChildProcessError) -> String {
        var line: [UInt8] = []
        while true {
            let more = try readSome()
            if more.isEmpty { break }
            line += more
            if line.contains(UInt8(ascii: "\n")) { break }
        }
        return String(decoding: line.prefix { $0 != UInt8(ascii: "\n") }, as: UTF8.self)
    }

    /// Writes all of `bytes`.
    public func write(_ bytes: some Collection<UInt8>) throws(ChildProcessError) {
        let fd = number
        let bytes = Array(bytes)
        var written = 0
        while written < bytes.count {
            let count = bytes[written...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { throw ChildProcessError(description: "write: errno \(errno)") }
            written += count
        }
    }
}
