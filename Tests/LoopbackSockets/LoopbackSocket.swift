import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Why a loopback socket could not be had: the call that failed and its errno.
public struct LoopbackSocketError: Error, CustomStringConvertible {
    /// `socket: errno 24`, `bind: errno 98`.
    public let description: String
}

/// TCP sockets on 127.0.0.1 at a port the kernel picks: what the tests'
/// own servers listen on, and the ports they need nothing to listen on.
public enum LoopbackSocket {
    /// A new TCP socket bound to 127.0.0.1 at a port the kernel chose,
    /// listening when `listening`; the caller closes it.
    ///
    /// - Throws: ``LoopbackSocketError`` naming the call that failed.
    public static func bound(listening: Bool) throws(LoopbackSocketError) -> (socket: Int32, port: Int) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw LoopbackSocketError(description: "socket: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(fd, pointer, length) == 0 && (!listening || listen(fd, 16) == 0)
                    && getsockname(fd, pointer, &length) == 0
            }
        }
        guard bound else {
            let failure = LoopbackSocketError(description: "bind: errno \(errno)")
            close(fd)
            throw failure
        }
        return (fd, Int(UInt16(bigEndian: address.sin_port)))
    }

    /// A 127.0.0.1 port nothing listens on now (bound, then closed) that no
    /// other caller in this process was given. A server started on it next
    /// (nginx, a loopback receiver) takes it; a client that connects to it is
    /// refused.
    ///
    /// The kernel picks a released port again soon enough (14 times in
    /// 20,000 picks within ten of the last), and two tests running at once
    /// on one port see each other's server: hence the record.
    ///
    /// - Throws: ``LoopbackSocketError`` naming the call that failed, or
    ///   when 100 picks in a row were all handed out before.
    public static func closedPort() throws(LoopbackSocketError) -> Int {
        for _ in 0..<100 {
            let (socket, port) = try bound(listening: false)
            close(socket)
            if handedOut.insert(port) { return port }
        }
        throw LoopbackSocketError(description: "the kernel picked only ports handed out before, 100 times")
    }

    /// Every port ``closedPort()`` has handed out in this process.
    private static let handedOut = PortRecord()
}

/// A set of ports under a lock. NSLock, a pthread mutex on Linux, not
/// Mutex: ThreadSanitizer does not see Mutex's futex there and reports races.
private final class PortRecord: @unchecked Sendable {
    // @unchecked: `ports` is only touched under `lock`.
    private let lock = NSLock()
    private var ports: Set<Int> = []

    /// Adds `port`; `false` when it was there already.
    func insert(_ port: Int) -> Bool {
        lock.withLock { ports.insert(port).inserted }
    }
}

/// A TCP server on 127.0.0.1 that hands each connection to `serve` on a
/// thread of its own (never the cooperative pool's, so a blocking read
/// cannot starve the tests' tasks); `serve` closes nothing, the listener
/// closes the connection when `serve` returns.
public final class LoopbackListener: @unchecked Sendable {
    // @unchecked: `socket` and `port` are set once in init and only read.
    /// The port it listens on at 127.0.0.1.
    public let port: Int
    private let socket: Int32

    /// Listens at once and accepts until ``stop()``.
    ///
    /// - Throws: ``LoopbackSocketError`` when it cannot listen.
    public init(serve: @escaping @Sendable (Int32) -> Void) throws(LoopbackSocketError) {
        let (socket, port) = try LoopbackSocket.bound(listening: true)
        self.socket = socket
        self.port = port
        Thread.detachNewThread {
            while true {
                let connection = accept(socket, nil, nil)
                guard connection >= 0 else { return }
                Thread.detachNewThread {
                    defer { close(connection) }
                    serve(connection)
                }
            }
        }
    }

    /// Stops accepting connections; those being served run to their end.
    public func stop() {
        shutdown(socket, Int32(SHUT_RDWR))
        close(socket)
    }
}
