import Foundation
import OAuth2
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A TCP server on 127.0.0.1 that answers each connection with the next
/// reply the test queued, byte for byte, and then ends it as told: reset
/// (RST), closed (FIN) or left hanging.
///
/// One connection at a time, on a thread of its own: it reads the whole
/// request (headers and `Content-Length` body), records it, and sends the
/// reply. A connection that finds no reply queued is reset.
final class ScriptedServer: Sendable {
    enum Reply: Sendable {
        /// Sends the bytes, then resets the connection (`SO_LINGER` 0: RST, not FIN).
        case reset(afterSending: [UInt8])
        /// Sends the bytes, then closes the connection normally (FIN).
        case close(afterSending: [UInt8])
        /// Sends the bytes, then neither sends more nor closes until the server stops.
        case stall(afterSending: [UInt8])
        /// Waits, then sends the bytes and closes normally (the client may have given up).
        case later(Duration, sending: [UInt8])
    }

    private struct State {
        var replies: [Reply] = []
        var requests: [String] = []
        var stalled: [Int32] = []
        var stopping = false
    }

    let port: Int
    private let listener: Int32
    private let state = LockedValue(State())

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Self.failure("socket") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                bind(fd, socketAddress, length) == 0 && listen(fd, 16) == 0 && getsockname(fd, socketAddress, &length) == 0
            }
        }
        guard bound else {
            let error = Self.failure("bind")
            close(fd)
            throw error
        }
        listener = fd
        port = Int(UInt16(bigEndian: address.sin_port))
        Thread { [self] in run() }.start()
    }

    /// A URL on this server.
    func url(_ path: String) throws -> URL {
        try #require(URL(string: "http://127.0.0.1:\(port)\(path)"))
    }

    /// Queues the reply to the next connection.
    func enqueue(_ reply: Reply) {
        state.withLock { $0.replies.append(reply) }
    }

    /// The requests received so far, as text, one per connection.
    var requests: [String] {
        state.withLock { $0.requests }
    }

    /// Stops accepting; the thread closes the listening socket and every
    /// connection left hanging within 50 ms. It does not wait for that,
    /// which would hold one of the few threads every test shares.
    func stop() {
        state.withLock { $0.stopping = true }
    }

    private func run() {
        while !state.withLock({ $0.stopping }) {
            var ready = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
            guard poll(&ready, 1, 50) > 0 else { continue }
            let connection = accept(listener, nil, nil)
            guard connection >= 0 else { continue }
            serve(connection)
        }
        for fd in state.withLock({ $0.stalled }) {
            close(fd)
        }
        close(listener)
    }

    private func serve(_ connection: Int32) {
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(connection, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let request = Self.readRequest(connection)
        let reply = state.withLock { state -> Reply? in
            state.requests.append(request)
            return state.replies.isEmpty ? nil : state.replies.removeFirst()
        }
        switch reply {
        case .reset(let bytes)?:
            Self.sendAll(connection, bytes)
            Self.reset(connection)
        case .close(let bytes)?:
            Self.sendAll(connection, bytes)
            close(connection)
        case .stall(let bytes)?:
            Self.sendAll(connection, bytes)
            state.withLock { $0.stalled.append(connection) }
        case .later(let delay, let bytes)?:
            Thread.sleep(forTimeInterval: Double(delay.components.seconds) + Double(delay.components.attoseconds) / 1e18)
            Self.sendAll(connection, bytes)
            close(connection)
        case nil:
            Self.reset(connection)
        }
    }

    /// The request line, headers and `Content-Length` body, as text.
    private static func readRequest(_ fd: Int32) -> String {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        var needed: Int?
        while needed.map({ bytes.count < $0 }) ?? true {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { break }
            bytes.append(contentsOf: buffer[0..<count])
            if needed == nil, let end = headerEnd(bytes) {
                needed = end + contentLength(String(decoding: bytes[..<end], as: UTF8.self))
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func headerEnd(_ bytes: [UInt8]) -> Int? {
        let separator: [UInt8] = [13, 10, 13, 10]
        guard bytes.count >= 4 else { return nil }
        for index in 0...(bytes.count - 4) where Array(bytes[index..<(index + 4)]) == separator {
            return index + 4
        }
        return nil
    }

    private static func contentLength(_ head: String) -> Int {
        for line in head.split(separator: "\r\n") {
            let parts = line.split(separator: ":", maxSplits: 1)
            if parts.count == 2, parts[0].lowercased() == "content-length" {
                return Int(parts[1].trimmingCharacters(in: .whitespaces)) ?? 0
            }
        }
        return 0
    }

    private static func sendAll(_ fd: Int32, _ bytes: [UInt8]) {
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard count > 0 else { return }
            sent += count
        }
    }

    /// Closes with `SO_LINGER` 0: the peer gets RST instead of FIN.
    private static func reset(_ fd: Int32) {
        var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
        close(fd)
    }

    private static func failure(_ call: String) -> any Error {
        TestServerError.didNotStart("\(call) failed: errno \(errno)")
    }
}
