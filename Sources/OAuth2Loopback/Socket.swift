#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The POSIX socket calls the receiver makes.
enum Socket {
    /// Why a socket call failed, from `errno`.
    struct Failure: Error, CustomStringConvertible {
        /// The `errno` value.
        let code: Int32
        let description: String

        init(_ call: String) {
            code = errno
            description = "\(call): \(String(cString: strerror(code)))"
        }

        /// The address is in use (by another program, or not yet released).
        var isAddressInUse: Bool { code == EADDRINUSE }
        /// The machine has no such address family or address (IPv6 turned off).
        var isAddressUnavailable: Bool { code == EAFNOSUPPORT || code == EADDRNOTAVAIL || code == EPROTONOSUPPORT }
    }

    /// A non-blocking, close-on-exec listening TCP socket on `address`, and the port it got.
    static func makeListener(_ address: LoopbackEndpoint.Address, port: UInt16) -> Result<(fd: Int32, port: UInt16), Failure> {
        let family = address == .ipv6Loopback ? AF_INET6 : AF_INET
        let fd = socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return .failure(Failure("socket")) }
        var on: Int32 = 1
        // Lets a fixed port be bound again while an earlier run's connections linger in TIME_WAIT.
        _ = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size))
        let bound: Int32
        switch address {
        case .ipv4(let host):
            var socketAddress = sockaddr_in()
            socketAddress.sin_family = sa_family_t(AF_INET)
            socketAddress.sin_port = port.bigEndian
            socketAddress.sin_addr.s_addr = in_addr_t(host).bigEndian
            bound = withUnsafePointer(to: &socketAddress) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
        case .ipv6Loopback:
            _ = setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &on, socklen_t(MemoryLayout<Int32>.size))
            var socketAddress = sockaddr_in6()
            socketAddress.sin6_family = sa_family_t(AF_INET6)
            socketAddress.sin6_port = port.bigEndian
            socketAddress.sin6_addr = in6addr_loopback
            bound = withUnsafePointer(to: &socketAddress) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) }
            }
        }
        guard bound == 0 else { return fail(fd, "bind") }
        guard listen(fd, 16) == 0 else { return fail(fd, "listen") }
        guard setNonBlocking(fd) else { return fail(fd, "fcntl") }
        guard let actual = boundPort(fd) else { return fail(fd, "getsockname") }
        return .success((fd, actual))
    }

    /// A non-blocking, close-on-exec connection from the backlog, or `nil` when none is left.
    static func accept(_ listener: Int32) -> Int32? {
        #if canImport(Glibc)
        let fd = Glibc.accept(listener, nil, nil)
        #else
        let fd = Musl.accept(listener, nil, nil)
        #endif
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
        #if canImport(Glibc)
        _ = Glibc.close(fd)
        #else
        _ = Musl.close(fd)
        #endif
    }

    /// Makes a descriptor non-blocking.
    static func setNonBlocking(_ fd: Int32) -> Bool {
        let flags = fcntl(fd, F_GETFL)
        return flags >= 0 && fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0
    }

    /// The local port of a bound socket of either family.
    private static func boundPort(_ fd: Int32) -> UInt16? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let named = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard named == 0 else { return nil }
        return withUnsafePointer(to: &storage) { pointer in
            switch Int32(pointer.pointee.ss_family) {
            case AF_INET:
                pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin_port) }
            case AF_INET6:
                pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin6_port) }
            default:
                nil
            }
        }
    }

    private static func fail(_ fd: Int32, _ call: String) -> Result<(fd: Int32, port: UInt16), Failure> {
        let failure = Failure(call)
        close(fd)
        return .failure(failure)
    }
}
