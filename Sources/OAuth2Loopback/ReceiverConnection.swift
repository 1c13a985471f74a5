#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// One connection to the receiver: its bytes so far and its deadline.
///
/// Used by the receiver's thread only.
final class ReceiverConnection {
    /// What the bytes received so far call for.
    enum Outcome {
        /// The request is not complete yet.
        case waiting
        /// The peer closed or failed before sending a request.
        case closed
        /// Answer and close; keep waiting.
        case answer(ReceiverPage)
        /// The redirect arrived: its request target.
        case redirect(String)
        /// The redirect, with the expected state, has a request line over the cap.
        case tooLong
    }

    /// The longest request head read before deciding anyway.
    static let maxHead = 64 * 1024

    let fd: Int32
    /// When it was accepted: the oldest connection still without a request
    /// gives its slot up first when every slot is taken.
    let accepted: ContinuousClock.Instant
    let deadline: ContinuousClock.Instant
    private var bytes: [UInt8] = []
    private var isClosed = false

    init(fd: Int32, accepted: ContinuousClock.Instant, deadline: ContinuousClock.Instant) {
        self.fd = fd
        self.accepted = accepted
        self.deadline = deadline
    }

    deinit {
        close()
    }

    /// Reads what is available and decides.
    func receive(_ matcher: RedirectMatcher) -> Outcome {
        var chunk = [UInt8](repeating: 0, count: 4096)
        let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if count < 0 {
            return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? .waiting : .closed
        }
        if count == 0 {
            return .closed
        }
        bytes.append(contentsOf: chunk[0..<count])
        return decide(matcher)
    }

    private func decide(_ matcher: RedirectMatcher) -> Outcome {
        let maxLine = LoopbackReceiver.maxRequestLine
        guard let lineEnd = bytes.firstIndex(of: UInt8(ascii: "\n")) else {
            return bytes.count > maxLine ? overLong(matcher) : .waiting
        }
        guard lineEnd <= maxLine else { return overLong(matcher) }
        var line = bytes[..<lineEnd]
        if line.last == UInt8(ascii: "\r") { line = line.dropLast() }
        let parts = line.split(separator: UInt8(ascii: " "), omittingEmptySubsequences: false)
        guard parts.count == 3, parts[2].starts(with: "HTTP/".utf8), parts[1].first == UInt8(ascii: "/"),
            parts[1].allSatisfy({ (0x21...0x7E).contains($0) })
        else {
            return .answer(.badRequest)
        }
        // Answer once the whole head is in: closing with unread bytes would
        // reset the connection and the browser would show an error instead of the page.
        guard headIsComplete || bytes.count > Self.maxHead else { return .waiting }
        let target = parts[1]
        guard matcher.matchesPath(target) else { return .answer(.notFound) }
        guard parts[0].elementsEqual("GET".utf8) else { return .answer(.methodNotAllowed) }
        guard matcher.carriesState(target) else { return .answer(.stateMismatch) }
        return .redirect(String(decoding: target, as: UTF8.self))
    }

    private var headIsComplete: Bool {
        bytes.firstRange(of: "\r\n\r\n".utf8) != nil || bytes.firstRange(of: "\n\n".utf8) != nil
    }

    /// An over-long request line ends the wait only when it is a GET of the
    /// redirect path whose readable part already carries the expected state.
    private func overLong(_ matcher: RedirectMatcher) -> Outcome {
        let prefix = Array("GET ".utf8)
        let end = min(bytes.count, LoopbackReceiver.maxRequestLine)
        guard end > prefix.count, bytes.starts(with: prefix) else { return .answer(.tooLong) }
        let target = bytes[prefix.count..<end]
        guard matcher.matchesPath(target), matcher.carriesState(target, truncated: true) else { return .answer(.tooLong) }
        return .tooLong
    }

    /// Sends the answer (waiting at most a second for the socket), then closes.
    func respond(_ response: [UInt8]) {
        var sent = 0
        let clock = ContinuousClock()
        let giveUp = clock.now + .seconds(1)
        while sent < response.count && clock.now < giveUp {
            let count = response[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
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
        drain()
        close()
    }

    /// Reads what the peer already sent and we did not, so that closing does
    /// not reset the connection before the peer reads the answer.
    private func drain() {
        var chunk = [UInt8](repeating: 0, count: 4096)
        for _ in 0..<16 {
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { return }
        }
    }

    /// Closes the connection; harmless when already closed.
    func close() {
        guard !isClosed else { return }
        isClosed = true
        Socket.close(fd)
    }
}
