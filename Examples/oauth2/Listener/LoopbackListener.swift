import OAuth2

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

#if canImport(Foundation)
import class Foundation.Thread
#endif

/// A one-shot HTTP listener on 127.0.0.1 that receives the authorization
/// redirect (RFC 8252 §7.3): it serves the first GET on the redirect path
/// and returns that request's target for the framework to validate.
///
/// Any other path gets a 404 and the listener keeps waiting (browsers ask
/// for `/favicon.ico`, and other local programs may knock). Every answer is
/// a small static page that reflects nothing of the request, with
/// `Cache-Control: no-store` and `Referrer-Policy: no-referrer`. Connections
/// are read without blocking, several at once (browsers open idle
/// speculative connections), each with its own deadline and size cap.
final class LoopbackListener: Sendable {
    /// The longest request line read: over it, a request for the redirect path is `url_too_long`.
    static let maxRequestLine = 16 * 1024
    /// The longest request head read before answering anyway.
    static let maxHead = 64 * 1024
    /// How long one connection may take to send its request.
    static let connectionTimeout: Duration = .seconds(15)
    /// How many connections are read at once; more wait in the kernel's backlog.
    static let maxConnections = 16
    /// How often a long wait is reported.
    static let progressInterval: Duration = .seconds(30)

    /// The port the listener is bound to (the ephemeral one when 0 was asked for).
    let port: UInt16
    private let socket: Int32

    /// Binds 127.0.0.1 on `port` (0 for an ephemeral port) and listens.
    ///
    /// - Throws: `transport_error` when the port cannot be bound (in use, not allowed).
    init(port: UInt16) throws(OAuth2Error) {
        switch Socket.makeListener(port: port) {
        case .success(let (fd, bound)):
            self.socket = fd
            self.port = bound
        case .failure(let reason):
            throw OAuth2Error(code: .transportError, message: "cannot listen on 127.0.0.1:\(port): \(reason)")
        }
    }

    deinit {
        Socket.close(socket)
    }

    /// Waits, on a thread of its own, for the redirect on `path`.
    ///
    /// - Parameters:
    ///   - path: the redirect URI's path, percent-encoded as sent.
    ///   - timeout: how long to wait for the browser.
    ///   - progress: told now and then how much time is left.
    /// - Returns: the request target (`/callback?code=…&state=…`), not yet validated.
    /// - Throws: `timeout` when nothing arrived in time; `url_too_long` when
    ///   the request for the redirect path was over the cap.
    func redirect(path: String, timeout: Duration, progress: @escaping @Sendable (Duration) -> Void) async throws(OAuth2Error) -> String {
        let result: Result<String, OAuth2Error> = await withCheckedContinuation { continuation in
            let thread = Thread {
                continuation.resume(returning: Result { () throws(OAuth2Error) -> String in
                    try self.waitForRedirect(path: path, timeout: timeout, progress: progress)
                })
            }
            thread.name = "oauth2 loopback listener"
            thread.start()
        }
        return try result.get()
    }

    /// The blocking loop behind ``redirect(path:timeout:progress:)``.
    func waitForRedirect(path: String, timeout: Duration, progress: (Duration) -> Void) throws(OAuth2Error) -> String {
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        var nextProgress = clock.now + Self.progressInterval
        var connections: [ListenerConnection] = []
        defer { connections.forEach { $0.close() } }
        while true {
            let now = clock.now
            guard now < deadline else {
                throw OAuth2Error(
                    code: .timeout,
                    message: "no redirect reached http://127.0.0.1:\(port)\(path) within \(Self.seconds(timeout)) s; run the command again and finish signing in sooner (or raise --listen-timeout)"
                )
            }
            if now >= nextProgress {
                progress(deadline - now)
                nextProgress = now + Self.progressInterval
            }
            connections.removeAll { connection in
                guard connection.deadline <= now else { return false }
                connection.close()
                return true
            }
            var wakeAt = min(deadline, nextProgress)
            for connection in connections { wakeAt = min(wakeAt, connection.deadline) }
            var descriptors = [pollfd(fd: socket, events: Int16(POLLIN), revents: 0)]
            descriptors += connections.map { pollfd(fd: $0.fd, events: Int16(POLLIN), revents: 0) }
            if connections.count >= Self.maxConnections { descriptors[0].events = 0 }
            let ready = poll(&descriptors, nfds_t(descriptors.count), Self.milliseconds(until: wakeAt, from: clock.now))
            guard ready > 0 else { continue }

            if descriptors[0].revents & Int16(POLLIN) != 0, let fd = Socket.accept(socket) {
                connections.append(ListenerConnection(fd: fd, deadline: clock.now + Self.connectionTimeout))
            }
            var finished: Set<Int32> = []
            for (index, descriptor) in descriptors.enumerated().dropFirst() where descriptor.revents != 0 {
                let connection = connections[index - 1]
                switch connection.receive(redirectPath: path) {
                case .waiting:
                    continue
                case .closed:
                    connection.close()
                case .answer(let response):
                    connection.respond(response)
                case .redirect(let target):
                    connection.respond(.received)
                    return target
                case .tooLong:
                    connection.respond(.tooLong)
                    throw OAuth2Error(
                        code: .urlTooLong,
                        message: "the redirect's request line is over \(Self.maxRequestLine) bytes"
                    )
                }
                finished.insert(connection.fd)
            }
            connections.removeAll { finished.contains($0.fd) }
        }
    }

    private static func milliseconds(until instant: ContinuousClock.Instant, from now: ContinuousClock.Instant) -> Int32 {
        let (seconds, attoseconds) = (instant - now).components
        guard seconds >= 0 else { return 0 }
        return Int32(min(seconds * 1000 + attoseconds / 1_000_000_000_000_000 + 1, 60_000))
    }

    static func seconds(_ duration: Duration) -> Int64 {
        duration.components.seconds
    }
}
