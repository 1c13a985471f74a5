#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The POSIX calls the file token store is built on, each turning `errno` into
/// a typed failure the store words for its caller.
///
/// Everything works relative to a directory descriptor (`openat`, `renameat`,
/// `unlinkat`) so a store keeps using the directory it checked when it was
/// opened, whatever later happens to the path.
package enum StoreFileSystem {
    /// A failed system call: which one, and its `errno`.
    struct Failure: Error {
        var call: String
        var errno: Int32

        /// `strerror` of the errno, for a message.
        var reason: String {
            guard let text = strerror(errno) else { return "errno \(errno)" }
            return String(cString: text)
        }
    }

    /// What a test puts in place of one system call's outcome.
    ///
    /// The functions that take `injecting:` ask for a fault right where they
    /// make their call, once per attempt; an answer skips the call (except
    /// `shortWrite`, which makes it with fewer bytes), so the code that
    /// handles the outcome, retries on `EINTR` included, is the code that
    /// runs in production.
    package enum InjectedFault: Sendable, Equatable {
        /// The call is not made and fails with this `errno`.
        case error(Int32)
        /// `write` writes at most this many bytes and reports that count, as
        /// a disk about to fill does; other calls ignore it.
        case shortWrite(Int)

        /// The `errno` to fail with, if the fault is a failure.
        var error: Int32? {
            switch self {
            case .error(let error): error
            case .shortWrite: nil
            }
        }
    }

    /// What `fstat` says about an open file.
    struct Status {
        var mode: mode_t
        var owner: uid_t
        var size: Int
        var modificationSeconds: Int

        var isRegularFile: Bool { mode & 0o170000 == 0o100000 }
        var isDirectory: Bool { mode & 0o170000 == 0o040000 }
        /// The permission bits, without the file type.
        var permissions: mode_t { mode & 0o7777 }
        /// Whether anyone but the owner may read, write or search it.
        var isOpenToGroupOrOthers: Bool { mode & 0o077 != 0 }
        /// The permission bits as `ls` users write them: `0644`.
        var octalPermissions: String {
            let digits = String(permissions, radix: 8)
            return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
        }

        /// ``requirePrivate(_:ownerAdvice:modeAdvice:)`` for a file the store
        /// opens (a token or lock file), which must also be a regular file.
        func requirePrivateRegularFile(_ subject: String, ownerAdvice: String, modeAdvice: String) throws(OAuth2Error) {
            guard isRegularFile else {
                throw OAuth2Error.store("\(subject) is not a regular file; refusing it")
            }
            try requirePrivate(subject, ownerAdvice: ownerAdvice, modeAdvice: modeAdvice)
        }

        /// Throws `store_error` unless this user owns the file and group and
        /// others have no permission on it: the rule for every file and
        /// directory the store trusts.
        ///
        /// - Parameters:
        ///   - subject: what the file is, for the message (never its content).
        ///   - ownerAdvice: what to do when someone else owns it.
        ///   - modeAdvice: what to do when it is open to others.
        func requirePrivate(_ subject: String, ownerAdvice: String, modeAdvice: String) throws(OAuth2Error) {
            guard owner == StoreFileSystem.currentUser else {
                throw OAuth2Error.store(
                    "\(subject) is owned by uid \(owner), not by this user (uid \(StoreFileSystem.currentUser)); \(ownerAdvice)"
                )
            }
            guard !isOpenToGroupOrOthers else {
                throw OAuth2Error.store("\(subject) has mode \(octalPermissions): group or others may use it; \(modeAdvice)")
            }
        }
    }

    /// The effective user id: the owner every store file must have.
    static var currentUser: uid_t { geteuid() }

    static func openFile(_ path: String, flags: Int32) throws(Failure) -> Int32 {
        let fd = retryingOnInterrupt { open(path, flags | O_CLOEXEC) }
        guard fd >= 0 else { throw Failure(call: "open", errno: errno) }
        return fd
    }

    static func openFile(
        in directory: Int32, _ name: String, flags: Int32, mode: mode_t = 0,
        injecting fault: () -> InjectedFault? = { nil }
    ) throws(Failure) -> Int32 {
        let fd = retryingOnInterrupt { () -> Int32 in
            if let injected = fault()?.error {
                errno = injected
                return -1
            }
            return openat(directory, name, flags | O_CLOEXEC, mode)
        }
        guard fd >= 0 else { throw Failure(call: "open", errno: errno) }
        return fd
    }

    static func status(of fd: Int32) throws(Failure) -> Status {
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw Failure(call: "fstat", errno: errno) }
        return Status(info)
    }

    /// The status of `name` itself (a symlink is not followed), or `nil` when it does not exist.
    static func status(in directory: Int32, _ name: String) throws(Failure) -> Status? {
        var info = stat()
        guard fstatat(directory, name, &info, AT_SYMLINK_NOFOLLOW) == 0 else {
            if errno == ENOENT { return nil }
            throw Failure(call: "fstatat", errno: errno)
        }
        return Status(info)
    }

    /// Reads the whole file, refusing one over `limit` bytes even if it grows while being read.
    static func readAll(_ fd: Int32, limit: Int) throws(Failure) -> [UInt8]? {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let count = chunk.withUnsafeMutableBytes { buffer in
                retryingOnInterrupt { read(fd, buffer.baseAddress, buffer.count) }
            }
            if count < 0 { throw Failure(call: "read", errno: errno) }
            if count == 0 { return bytes }
            bytes.append(contentsOf: chunk[0..<count])
            if bytes.count > limit { return nil }
        }
    }

    static func writeAll(_ fd: Int32, _ bytes: [UInt8], injecting fault: () -> InjectedFault? = { nil }) throws(Failure) {
        var written = 0
        while written < bytes.count {
            let count = bytes.withUnsafeBytes { buffer in
                retryingOnInterrupt { () -> Int in
                    var length = buffer.count - written
                    switch fault() {
                    case .error(let injected)?:
                        errno = injected
                        return -1
                    case .shortWrite(let most)?:
                        length = min(length, max(most, 0))
                    case nil:
                        break
                    }
                    return write(fd, buffer.baseAddress.map { $0 + written }, length)
                }
            }
            if count < 0 { throw Failure(call: "write", errno: errno) }
            if count == 0 { throw Failure(call: "write", errno: EIO) }
            written += count
        }
    }

    /// Takes an exclusive `flock` without waiting: `true` when taken, `false` when another holds it.
    static func tryLockExclusive(_ fd: Int32) throws(Failure) -> Bool {
        while true {
            if flock(fd, LOCK_EX | LOCK_NB) == 0 { return true }
            switch errno {
            case EINTR: continue
            case EWOULDBLOCK: return false
            default: throw Failure(call: "flock", errno: errno)
            }
        }
    }

    static func changeMode(_ fd: Int32, _ mode: mode_t, injecting fault: () -> InjectedFault? = { nil }) throws(Failure) {
        if let injected = fault()?.error { throw Failure(call: "fchmod", errno: injected) }
        guard fchmod(fd, mode) == 0 else { throw Failure(call: "fchmod", errno: errno) }
    }

    static func synchronize(_ fd: Int32, injecting fault: () -> InjectedFault? = { nil }) throws(Failure) {
        let result = retryingOnInterrupt { () -> Int32 in
            if let injected = fault()?.error {
                errno = injected
                return -1
            }
            return fsync(fd)
        }
        guard result == 0 else { throw Failure(call: "fsync", errno: errno) }
    }

    /// Closes `fd`; a failure matters after writing (some file systems report write errors only here).
    ///
    /// Never retried: Linux releases the descriptor even when `close` fails,
    /// so a retry could close a descriptor another thread just opened.
    static func closeFile(_ fd: Int32, injecting fault: () -> InjectedFault? = { nil }) throws(Failure) {
        if let injected = fault()?.error {
            // Released anyway, as a real failing close releases it: an injected
            // failure must not leak a descriptor into the test process.
            _ = close(fd)
            throw Failure(call: "close", errno: injected)
        }
        guard close(fd) == 0 else { throw Failure(call: "close", errno: errno) }
    }

    /// Closes `fd` where a failure changes nothing (a file only read, or already failed).
    static func closeQuietly(_ fd: Int32) {
        _ = close(fd)
    }

    static func renameFile(in directory: Int32, _ from: String, to: String, injecting fault: () -> InjectedFault? = { nil }) throws(Failure)
    {
        if let injected = fault()?.error { throw Failure(call: "rename", errno: injected) }
        guard renameat(directory, from, directory, to) == 0 else { throw Failure(call: "rename", errno: errno) }
    }

    /// Removes `name`; returns `false` when it did not exist.
    @discardableResult
    static func removeFile(in directory: Int32, _ name: String) throws(Failure) -> Bool {
        guard unlinkat(directory, name, 0) == 0 else {
            if errno == ENOENT { return false }
            throw Failure(call: "unlink", errno: errno)
        }
        return true
    }

    /// Opens the directory at `path`, creating it and any missing parents
    /// with mode 0700; `created` is whether `path` itself was made.
    ///
    /// One component at a time, each relative to the descriptor of the one
    /// before (`mkdirat`, `openat`), so no step resolves the path again: a
    /// directory this call makes is opened with `O_NOFOLLOW` and its mode set
    /// through that descriptor (`fchmod`; a umask can only take bits away),
    /// so a symbolic link swapped in for it in a shared parent is refused
    /// instead of followed, and no later step lands anywhere else. A
    /// component that was already there is opened as it is, links included:
    /// it is the user's own path, and the store checks the final directory's
    /// owner and mode.
    ///
    /// - Parameter afterCreating: called with the path made so far right after
    ///   each `mkdirat`, so a test can swap in a link at the worst moment.
    static func openDirectory(
        creating path: String,
        afterCreating: (_ path: String) -> Void = { _ in }
    ) throws(Failure) -> (descriptor: Int32, created: Bool) {
        var current = try openFile(path.hasPrefix("/") ? "/" : ".", flags: O_RDONLY | O_DIRECTORY)
        var created = false
        var walked = path.hasPrefix("/") ? "" : "."
        for name in path.split(separator: "/") where name != "." {
            let name = String(name)
            walked += "/" + name
            let next: Int32
            do throws(Failure) {
                if mkdirat(current, name, 0o700) == 0 {
                    afterCreating(walked)
                    next = try openFile(in: current, name, flags: O_RDONLY | O_DIRECTORY | O_NOFOLLOW)
                    created = true
                    guard fchmod(next, 0o700) == 0 else {
                        let failure = Failure(call: "fchmod", errno: errno)
                        closeQuietly(next)
                        throw failure
                    }
                } else if errno == EEXIST {
                    next = try openFile(in: current, name, flags: O_RDONLY | O_DIRECTORY)
                    created = false
                } else {
                    throw Failure(call: "mkdir", errno: errno)
                }
            } catch {
                closeQuietly(current)
                throw error
            }
            closeQuietly(current)
            current = next
        }
        return (current, created)
    }

    /// The names in the directory (without `.` and `..`).
    static func entries(of directory: Int32) throws(Failure) -> [String] {
        // fdopendir takes the descriptor over, so give it a copy, close-on-exec
        // as every descriptor of the store: an app's child process started
        // meanwhile must not inherit it.
        let copy = fcntl(directory, F_DUPFD_CLOEXEC, 0)
        guard copy >= 0 else { throw Failure(call: "fcntl(F_DUPFD_CLOEXEC)", errno: errno) }
        guard let stream = fdopendir(copy) else {
            let failure = Failure(call: "fdopendir", errno: errno)
            closeQuietly(copy)
            throw failure
        }
        defer { closedir(stream) }
        // The copy shares its offset with the store's descriptor; start from the top.
        rewinddir(stream)
        var names: [String] = []
        while let entry = readdir(stream) {
            let name = withUnsafePointer(to: &entry.pointee.d_name) { pointer in
                pointer.withMemoryRebound(to: CChar.self, capacity: MemoryLayout.size(ofValue: pointer.pointee)) {
                    String(cString: $0)
                }
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    private static func retryingOnInterrupt<Result: BinaryInteger>(_ call: () -> Result) -> Result {
        while true {
            let result = call()
            if result == -1 && errno == EINTR { continue }
            return result
        }
    }
}

extension StoreFileSystem.Status {
    init(_ info: stat) {
        #if canImport(Darwin)
        let seconds = Int(info.st_mtimespec.tv_sec)
        #else
        let seconds = Int(info.st_mtim.tv_sec)
        #endif
        self.init(mode: info.st_mode, owner: info.st_uid, size: Int(info.st_size), modificationSeconds: seconds)
    }
}
