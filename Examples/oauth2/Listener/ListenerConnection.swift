#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// One connection to the ``LoopbackListener``: its bytes so far and its deadline.
///
/// Used by the listener's thread only.
final class ListenerConnection {
    /// What the bytes received so far call for.
    enum Outcome {
        /// The request is not complete yet.
        case waiting
        /// The peer closed or failed before sending a request.
        case closed
        /// Answer and close; keep listening.
        case answer(ListenerResponse)
        /// The redirect arrived: its request target.
        case redirect(String)
        /// A request for the redirect path whose request line is over the cap.
        case tooLong
    }

    let fd: Int32
    let deadline: ContinuousClock.Instant
    private var bytes: [UInt8] = []
    private var isClosed = false

    init(fd: Int32, deadline: ContinuousClock.Instant) {
        self.fd = fd
        self.deadline = deadline
    }

    deinit {
        close()
    }

    /// Reads what is available and decides.
    func receive(redirectPath: String) -> Outcome {
        var chunk = [UInt8](repeating: 0, count: 4096)
        let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if count < 0 {
            return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? .waiting : .closed
        }
        if count == 0 {
            return .closed
        }
        bytes.append(contentsOf: chunk[0..<count])
        return decide(redirectPath: redirectPath)
    }

    private func decide(redirectPath: String) -> Outcome {
        guard let lineEnd = bytes.firstIndex(of: UInt8(ascii: "\n")) else {
            guard bytes.count > LoopbackListener.maxRequestLine else { return .waiting }
            return startsLikeRedirect(redirectPath) ? .tooLong : .answer(.tooLong)
        }
        guard lineEnd <= LoopbackListener.maxRequestLine else {
            return startsLikeRedirect(redirectPath) ? .tooLong : .answer(.tooLong)
        }
        var line = bytes[..<lineEnd]
        if line.last == UInt8(ascii: "\r") { line = line.dropLast() }
        let parts = line.split(separator: UInt8(ascii: " "), omittingEmptySubsequences: false)
        guard parts.count == 3, parts[2].starts(with: Array("HTTP/".utf8)), parts[1].first == UInt8(ascii: "/") else {
            return .answer(.badRequest)
        }
        let target = String(decoding: parts[1], as: UTF8.self)
        let path = target.prefix { $0 != "?" && $0 != "#" }
        guard path == redirectPath else { return .answer(.notFound) }
        guard parts[0].elementsEqual("GET".utf8) else { return .answer(.methodNotAllowed) }
        // Answer once the whole head is in: closing with unread bytes would
        // reset the connection and the browser would show an error instead of the page.
        guard headIsComplete || bytes.count > LoopbackListener.maxHead else { return .waiting }
        return .redirect(target)
    }

    private var headIsComplete: Bool {
        let crlf: [UInt8] = Array("\r\n\r\n".utf8)
        let lf: [UInt8] = Array("\n\n".utf8)
        return bytes.firstRange(of: crlf) != nil || bytes.firstRange(of: lf) != nil
    }

    /// Whether the partial request line is a GET of the redirect path.
    private func startsLikeRedirect(_ redirectPath: String) -> Bool {
        let prefix = Array("GET \(redirectPath)".utf8)
        guard bytes.count > prefix.count, bytes.starts(with: prefix) else { return false }
        let next = bytes[prefix.count]
        return next == UInt8(ascii: "?") || next == UInt8(ascii: " ") || next == UInt8(ascii: "#")
    }

    /// Sends the answer (waiting at most a second for the socket), then closes.
    func respond(_ response: ListenerResponse) {
        let data = response.bytes
        var sent = 0
        let clock = ContinuousClock()
        let giveUp = clock.now + .seconds(1)
        while sent < data.count && clock.now < giveUp {
            let count = data[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if count > 0 {
                sent += count
            } else if count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
                var descriptor = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                _ = poll(&descriptor, 1, 100)
            } else {
                break
            }
        }
        shutdown(fd, Int32(SHUT_WR))
        close()
    }

    /// Closes the connection; harmless when already closed.
    func close() {
        guard !isClosed else { return }
        isClosed = true
        Socket.close(fd)
    }
}
