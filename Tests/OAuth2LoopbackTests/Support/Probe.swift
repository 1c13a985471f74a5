import Foundation
import LoopbackSockets
import OAuth2
@testable import OAuth2Loopback
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Talks to a receiver as a browser would, and checks its ports from outside.
enum Probe {
    /// A GET (or another method) through the framework's own transport,
    /// bounded at 30 s: room for a wait task that starts late on a busy
    /// two-core machine, and still a failure, not a hang, when nothing answers.
    static func request(_ url: String, method: HTTPRequest.Method = .get) async throws -> HTTPTransportResponse {
        let transport = CurlTransport(configuration: CurlTransport.Configuration(timeout: .seconds(30)))
        let target = try #require(URL(string: url))
        do {
            let response = try await transport.send(HTTPTransportRequest(method: method, url: target))
            await transport.shutdown()
            return response
        } catch {
            await transport.shutdown()
            throw error
        }
    }

    /// A port nobody listens on right now that no other test of this
    /// process was given (``LoopbackSocket/closedPort()``): two tests running
    /// at once on one port would see each other's receiver.
    static func freePort() throws -> UInt16 {
        UInt16(try LoopbackSocket.closedPort())
    }

    /// Whether 127.0.0.1:`port` can be bound and listened on now, without
    /// `SO_REUSEADDR`: nothing holds it, not even a closing socket.
    ///
    /// Only a `false` while a receiver holds the port is certain. Once it has
    /// let go, anything on the machine may bind the port (a full run beside a
    /// CPU hog saw it taken between the timeout test's close and this check):
    /// ``isOpen(_:)`` tells whether the receiver's own sockets are closed.
    static func canListen(onIPv4Port port: UInt16) -> Bool {
        guard let fd = listener(port: port) else { return false }
        close(fd)
        return true
    }

    /// A socket listening on 127.0.0.1:`port`, for tests that need the port taken.
    static func listener(port: UInt16) -> Int32? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        var address = loopback(port: port)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 1) == 0 else {
            close(fd)
            return nil
        }
        return fd
    }

    /// An open TCP connection to 127.0.0.1:`port` that sends nothing, like a
    /// browser's speculative connection.
    static func idleConnection(port: UInt16) -> Int32? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        var address = loopback(port: port)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            close(fd)
            return nil
        }
        return fd
    }

    /// The addresses this process's listening TCP sockets on `port` are bound
    /// to, as `getsockname` reports them (`127.0.0.1`, `::1`, `0.0.0.0`, …),
    /// sorted. Other tests' sockets count too: the kernel gives an ephemeral
    /// port bound on one address to sockets on other addresses as well.
    static func listeningAddresses(port: UInt16) throws -> [String] {
        try openDescriptors().compactMap { listeningAddress(of: $0) }.filter { $0.port == port }.map(\.address).sorted()
    }

    /// The addresses `descriptors` listen on, sorted; `nil` when one of them
    /// is not a listening TCP socket.
    static func listeningAddresses(of descriptors: [Int32]) -> [String]? {
        let addresses = descriptors.compactMap { listeningAddress(of: $0)?.address }
        return addresses.count == descriptors.count ? addresses.sorted() : nil
    }

    private static func listeningAddress(of fd: Int32) -> (address: String, port: UInt16)? {
        var listening: Int32 = 0
        var optionLength = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &optionLength) == 0, listening == 1 else { return nil }
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let named = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) == 0 }
        }
        guard named else { return nil }
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        let port: UInt16
        switch Int32(storage.ss_family) {
        case AF_INET:
            var address = withUnsafeBytes(of: storage) { $0.loadUnaligned(as: sockaddr_in.self) }
            guard inet_ntop(AF_INET, &address.sin_addr, &text, socklen_t(text.count)) != nil else { return nil }
            port = UInt16(bigEndian: address.sin_port)
        case AF_INET6:
            var address = withUnsafeBytes(of: storage) { $0.loadUnaligned(as: sockaddr_in6.self) }
            guard inet_ntop(AF_INET6, &address.sin6_addr, &text, socklen_t(text.count)) != nil else { return nil }
            port = UInt16(bigEndian: address.sin6_port)
        default:
            return nil
        }
        return (String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self), port)
    }

    /// The receiver's listening sockets, each as the kernel names it
    /// (`socket:[inode]`): a name no other socket has while this one is open,
    /// unlike its descriptor's number, which the next `socket()` may reuse.
    static func sockets(of receiver: LoopbackReceiver) throws -> Set<String> {
        let descriptors = receiver.listeningDescriptors
        let names = Set(descriptors.compactMap(kernelName(of:)))
        try #require(!descriptors.isEmpty && names.count == descriptors.count && names.allSatisfy { $0.hasPrefix("socket:[") })
        return names
    }

    /// Whether this process still has one of `sockets` open: a closed
    /// listening socket that had no connections leaves nothing behind, so
    /// `false` is its port freed.
    static func isOpen(_ sockets: Set<String>) throws -> Bool {
        try openDescriptors().contains { fd in kernelName(of: fd).map(sockets.contains) ?? false }
    }

    /// This process's open descriptors, as `/proc/self/fd` lists them.
    private static func openDescriptors() throws -> [Int32] {
        try FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").compactMap { Int32($0) }
    }

    /// What `/proc/self/fd` says `fd` is (`socket:[inode]`, a path, …);
    /// `nil` for a descriptor closed since it was listed.
    private static func kernelName(of fd: Int32) -> String? {
        try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(fd)")
    }

    /// Whether this machine has IPv6 loopback.
    static let hasIPv6Loopback: Bool = {
        let fd = socket(AF_INET6, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in6()
        address.sin6_family = sa_family_t(AF_INET6)
        address.sin6_addr = in6addr_loopback
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) == 0 }
        }
    }()

    private static func loopback(port: UInt16) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = in_addr_t(0x7F00_0001).bigEndian
        return address
    }
}

/// Runs a receiver's wait in a task of its own, as an app would.
struct Waiting: Sendable {
    let task: Task<URL, any Error>

    init(_ receiver: LoopbackReceiver, state: String, timeout: Duration = .seconds(60)) {
        task = Task { try await receiver.redirect(state: state, timeout: timeout) }
    }

    init(task: Task<URL, any Error>) {
        self.task = task
    }

    /// The URL the wait returned.
    func url() async throws -> URL {
        try await task.value
    }

    /// The code of the error the wait ended with; `nil` when it returned a URL.
    func errorCode() async -> OAuth2Error.Code? {
        do {
            _ = try await task.value
            return nil
        } catch let error as OAuth2Error {
            return error.code
        } catch {
            Issue.record("not an OAuth2Error: \(error)")
            return nil
        }
    }
}
