import Foundation
import LoopbackSockets
import OAuth2

#if canImport(Glibc)
import Glibc
#endif

/// The app's `backchannel_logout_uri` for the back-channel logout modules:
/// an HTTP/1.1 server on 127.0.0.1 that takes the provider's POST and
/// answers what the library says of it, as an app's route does
/// (``OAuth2Provider/verifyLogoutRequest(body:)``, then ``BackChannelLogout``).
///
/// Its sockets are served on threads of its own (never the cooperative
/// pool's); a request waits at most ``answerTimeout`` for the library's
/// answer, and reads time out too, so a failure cannot hang the test.
final class BackChannelLogoutReceiver: @unchecked Sendable {
    // @unchecked: `listener` and `provider` are set once, in init; `state` is under `lock`.
    static let answerTimeout: DispatchTimeInterval = .seconds(20)

    private var listener: LoopbackListener!
    private let provider: OAuth2Provider
    private let lock = NSLock()
    private var state: [Result<LogoutToken, OAuth2Error>] = []

    /// The port it listens on at 127.0.0.1.
    var port: Int { listener.port }

    /// The URL to register as the client's `backchannel_logout_uri`.
    var url: String { "http://127.0.0.1:\(port)/backchannel-logout" }

    /// What the library made of each request: the logouts the app would
    /// have done, or why it refused.
    var outcomes: [Result<LogoutToken, OAuth2Error>] { lock.withLock { state } }

    init(provider: OAuth2Provider) throws {
        self.provider = provider
        listener = try LoopbackListener { [self] connection in serve(connection) }
    }

    /// Stops accepting connections.
    func stop() {
        listener.stop()
    }

    private func serve(_ connection: Int32) {
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(connection, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        guard let body = readBody(connection) else {
            return write(connection, status: 400, reason: "Bad Request", headers: [], body: Data())
        }
        let answer = LockedAnswer()
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
        lock.withLock { state.append(outcome) }
        // What the app's route does: end the sessions (here: record them), then answer.
        let response: BackChannelLogout
        switch outcome {
        case .success: response = .ok
        case .failure(let error): response = .failure(error)
        }
        let headers = response.headers.map { ($0.name.rawName, $0.value) }
        write(
            connection, status: response.status.code, reason: response.status.reasonPhrase, headers: headers, body: response.body)
    }

    /// The body of one request, read by its Content-Length (bounded).
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
            var sent = 0
            while sent < raw.count {
                let count = send(connection, raw.baseAddress! + sent, raw.count - sent, Int32(MSG_NOSIGNAL))
                guard count > 0 else { return }
                sent += count
            }
        }
    }

    private final class LockedAnswer: @unchecked Sendable {
        // @unchecked: `stored` is under `lock`.
        private let lock = NSLock()
        private var stored: Result<LogoutToken, OAuth2Error>?
        func set(_ value: Result<LogoutToken, OAuth2Error>) { lock.withLock { stored = value } }
        var value: Result<LogoutToken, OAuth2Error>? { lock.withLock { stored } }
    }
}
