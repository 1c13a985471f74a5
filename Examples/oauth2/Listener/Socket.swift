#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The POSIX socket calls the ``LoopbackListener`` makes.
enum Socket {
    /// Why a socket call failed, from `errno`.
    struct Failure: Error, CustomStringConvertible {
        let description: String

        init(_ call: String) {
            description = "\(call): \(String(cString: strerror(errno)))"
        }
    }

    /// A non-blocking listening TCP socket on 127.0.0.1 and the port it got.
    static func makeListener(port: UInt16) -> Result<(fd: Int32, port: UInt16), Failure> {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return .failure(Failure("socket")) }
        var reuse: Int32 = 1
        // Lets a fixed port be bound again while an earlier run's connections linger in TIME_WAIT.
        _ = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &reuse, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = in_addr_t(0x7F00_0001).bigEndian
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0 else { return fail(fd, "bind") }
        guard listen(fd, 16) == 0 else { return fail(fd, "listen") }
        guard setNonBlocking(fd) else { return fail(fd, "fcntl") }
        var actual = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &actual) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard named == 0 else { return fail(fd, "getsockname") }
        return .success((fd, UInt16(bigEndian: actual.sin_port)))
    }

    /// A non-blocking, close-on-exec connection from the backlog, or `nil` when none is left.
    static func accept(_ listener: Int32) -> Int32? {
        let fd = Glibc.accept(listener, nil, nil)
        guard fd >= 0 else { return nil }
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        guard setNonBlocking(fd) else {
            close(fd)
            return nil
        }
        return fd
    }

    /// Closes a descriptor, ignoring errors (nothing useful can be done with them here).
    static func close(_ fd: Int32) {
        _ = Glibc.close(fd)
    }

    private static func setNonBlocking(_ fd: Int32) -> Bool {
        let flags = fcntl(fd, F_GETFL)
        return flags >= 0 && fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0
    }

    private static func fail(_ fd: Int32, _ call: String) -> Result<(fd: Int32, port: UInt16), Failure> {
        let failure = Failure(call)
        close(fd)
        return .failure(failure)
    }
}
