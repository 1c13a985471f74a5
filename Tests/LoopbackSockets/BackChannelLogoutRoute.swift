import Foundation
import OAuth2

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// An app's `backchannel_logout_uri`, for the tests that have a provider
/// send one (the conformance suite's modules, glewlwyd): an HTTP/1.1 server
/// on 127.0.0.1 that takes the provider's POST and answers what the library
/// says of it, as an app's route does
/// (``OAuth2Provider/verifyLogoutRequest(body:)``, then ``BackChannelLogout``).
///
/// Its sockets are served on threads of its own (never the cooperative
/// pool's); a request waits at most ``answerTimeout`` for the library's
/// answer, and reads time out too, so a failure cannot hang the test.
public final class BackChannelLogoutRoute: @unchecked Sendable {
    // @unchecked: `listener` and `provider` are set once, in init; `received` is under `lock`.
    /// One POST: its body, what the library made of it, and the answer sent.
    public typealias Request = (body: Data, outcome: Result<LogoutToken, OAuth2Error>, answer: BackChannelLogout)

    static let answerTimeout: DispatchTimeInterval = .seconds(20)

    private var listener: LoopbackListener!
    private let provider: OAuth2Provider
    private let lock = NSLock()
    private var received: [Request] = []

    /// The URL to register as the client's `backchannel_logout_uri`.
    public var url: String { "http://127.0.0.1:\(listener.port)/backchannel-logout" }

    /// Every request answered so far, in order.
    public var requests: [Request] { lock.withLock { received } }

    /// What the library made of each request: the logouts the app would
    /// have done, or why it refused.
    public var outcomes: [Result<LogoutToken, OAuth2Error>] { requests.map(\.outcome) }

    /// Listens at once.
    ///
    /// - Throws: ``LoopbackSocketError`` when it cannot listen.
    public init(provider: OAuth2Provider) throws {
        self.provider = provider
        listener = try LoopbackListener { [self] connection in serve(connection) }
    }

    /// Stops accepting connections.
    public func stop() {
        listener.stop()
    }

    /// The first request answered, waited for up to `limit` (a provider may
    /// send from a thread of its own, after the end-session request returns);
    /// `nil` when none came.
    public func firstRequest(within limit: Duration = .seconds(20)) async throws -> Request? {
        let deadline = ContinuousClock.now + limit
        while ContinuousClock.now < deadline {
            if let first = lock.withLock({ received.first }) { return first }
            try await Task.sleep(for: .milliseconds(100))
        }
        return lock.withLock { received.first }
    }

    private func serve(_ connection: Int32) {
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(connection, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        guard let body = readBody(connection) else {
            return write(connection, status: 400, reason: "Bad Request", headers: [], body: Data())
        }
        let answer = LockedOutcome()
        let done = DispatchSemaphore(value: 0)
        let provider = self.provider
        Task {
            let outcome: Result<LogoutToken, OAuth2Error>
            do throws(OAuth2Error) {
                outcome = .success(try await provider.verifyLogoutRequest(body: body))
            } catch {
                outcome = .failure(error)
            }
            answer.set(outcome)
            done.signal()
        }
        guard done.wait(timeout: .now() + Self.answerTimeout) == .success, let outcome = answer.value else {
            return write(connection, status: 500, reason: "Internal Server Error", headers: [], body: Data())
        }
        // What the app's route does: end the sessions (here: record them), then answer.
        let response: BackChannelLogout
        switch outcome {
        case .success: response = .ok
        case .failure(let error): response = .failure(error)
        }
        lock.withLock { received.append((body, outcome, response)) }
        let headers = response.headers.map { ($0.name.rawName, $0.value) }
        write(
            connection, status: response.status.code, reason: response.status.reasonPhrase, headers: headers, body: response.body)
    }

    /// The body of one request, read by its Content-Length (bounded a little
    /// above the library's own limit, so that the library is what refuses).
    private func readBody(_ connection: Int32) -> Data? {
        var received = Data()
        var buffer = [UInt8](repeating: 0, count: 4096)
        let separator = Data("\r\n\r\n".utf8)
        while received.range(of: separator) == nil {
            let count = recv(connection, &buffer, buffer.count, 0)
            guard count > 0, received.count < 16 * 1024 else { return nil }
            received.append(contentsOf: buffer[0..<count])
        }
        guard let end = received.range(of: separator) else { return nil }
        let head = String(decoding: received[..<end.lowerBound], as: UTF8.self)
        let length =
            head.split(separator: "\r\n").compactMap { line -> Int? in
                let parts = line.split(separator: ":", maxSplits: 1)
                guard parts.count == 2, parts[0].lowercased() == "content-length" else { return nil }
                return Int(parts[1].trimmingCharacters(in: .whitespaces))
            }.first ?? 0
        guard length <= BackChannelLogout.maxBodySize + 1024 else { return nil }
        var body = Data(received[end.upperBound...])
        while body.count < length {
            let count = recv(connection, &buffer, buffer.count, 0)
            guard count > 0 else { return nil }
            body.append(contentsOf: buffer[0..<count])
        }
        return body.prefix(length)
    }

    private func write(_ connection: Int32, status: Int, reason: String, headers: [(String, String)], body: Data) {
        var text = "HTTP/1.1 \(status) \(reason)\r\n"
        for (name, value) in headers { text += "\(name): \(value)\r\n" }
        text += "Content-Length: \(body.count)\r\nConnection: close\r\n\r\n"
        let bytes = Data(text.utf8) + body
        bytes.withUnsafeBytes { raw in
            guard let base = raw.baseAddress else { return }
            var sent = 0
            while sent < raw.count {
                let count = send(connection, base + sent, raw.count - sent, Int32(MSG_NOSIGNAL))
                guard count > 0 else { return }
                sent += count
            }
        }
    }

    private final class LockedOutcome: @unchecked Sendable {
        // @unchecked: `stored` is under `lock`.
        private let lock = NSLock()
        private var stored: Result<LogoutToken, OAuth2Error>?
        func set(_ value: Result<LogoutToken, OAuth2Error>) { lock.withLock { stored = value } }
        var value: Result<LogoutToken, OAuth2Error>? { lock.withLock { stored } }
    }
}
