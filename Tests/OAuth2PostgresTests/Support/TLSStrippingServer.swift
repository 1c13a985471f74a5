import Foundation
import LoopbackSockets

#if canImport(Glibc)
import Glibc
#endif

/// A server on 127.0.0.1 that does what someone on the network path who
/// strips TLS does: it answers PostgreSQL's SSLRequest with `N` ("no TLS
/// here") and records what the client sends in the clear after that (a
/// startup message), then closes the connection.
final class TLSStrippingServer: @unchecked Sendable { // `listener` is set once, in init; `state` is under `lock`
    private var listener: LoopbackListener!
    private let lock = NSLock()
    private var state = (connections: 0, plaintext: [UInt8]())

    /// The port it listens on at 127.0.0.1.
    var port: Int { listener.port }

    init() throws {
        listener = try LoopbackListener { [self] connection in serve(connection) }
    }

    /// How many connections came, and every byte they sent after the SSLRequest.
    var seen: (connections: Int, plaintext: [UInt8]) { lock.withLock { state } }

    func stop() {
        listener.stop()
    }

    private func serve(_ connection: Int32) {
        lock.withLock { state.connections += 1 }
        var timeout = timeval(tv_sec: 2, tv_usec: 0)
        setsockopt(connection, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var request = [UInt8](repeating: 0, count: 8)
        guard recv(connection, &request, 8, Int32(MSG_WAITALL)) == 8 else { return }
        // Length 8, code 80877103: an SSLRequest. Anything else is not a client of this test.
        guard request == [0, 0, 0, 8, 0x04, 0xD2, 0x16, 0x2F] else { return }
        guard send(connection, "N", 1, Int32(MSG_NOSIGNAL)) == 1 else { return }
        // What a client that goes on without TLS sends first (its startup
        // message) is enough; then the connection is closed.
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = recv(connection, &buffer, buffer.count, 0)
        if count > 0 {
            lock.withLock { state.plaintext += buffer[0..<count] }
        }
    }
}
