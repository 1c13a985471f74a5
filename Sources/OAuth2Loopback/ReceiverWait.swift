import OAuth2

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// One wait for the redirect: the blocking `poll` loop run on the receiver's
/// thread, which owns the listening sockets and closes them when it ends.
///
/// Connections are read without blocking, several at once (browsers open
/// idle speculative connections), each with its own deadline and size cap.
/// When every slot is taken and another connection waits in the backlog, the
/// oldest connection that has held its slot for ``idleBound`` without a
/// complete request gives it up: a local process that opens idle connections
/// cannot keep the browser's redirect out until the sign-in times out.
struct ReceiverWait: Sendable {
    /// How long one connection may take to send its request.
    static let connectionTimeout: Duration = .seconds(15)
    /// How many connections are read at once; more wait in the kernel's backlog.
    static let maxConnections = 16
    /// How long a connection keeps its slot, without a complete request,
    /// against one waiting in the backlog. A browser sends its request at
    /// once; a second is far more than it needs on loopback.
    static let idleBound: Duration = .seconds(1)
    /// The longest wait honoured: a year.
    static let longestWait: Duration = .seconds(365 * 86_400)

    let listeners: [Int32]
    let wakeup: Wakeup
    let matcher: RedirectMatcher
    let pages: ReceiverPages
    let redirectURI: URL
    let timeout: Duration

    /// Waits; returns the redirect's request target. Closes every socket before returning.
    func run() -> Result<String, OAuth2Error> {
        defer { closeListeners() }
        var connections: [ReceiverConnection] = []
        defer { connections.forEach { $0.close() } }
        let clock = ContinuousClock()
        // Clamped so that no timeout, however large, overflows the clock.
        let deadline = clock.now + min(max(timeout, .zero), Self.longestWait)
        while true {
            if let reason = wakeup.reason {
                return .failure(Self.ended(by: reason))
            }
            let now = clock.now
            guard now < deadline else {
                return .failure(
                    OAuth2Error(
                        code: .timeout,
                        message: "no redirect reached \(redirectURI.absoluteString) within \(Self.text(timeout))"
                    ))
            }
            connections.removeAll { connection in
                guard connection.deadline <= now else { return false }
                connection.close()
                return true
            }
            var wakeAt = deadline
            for connection in connections { wakeAt = min(wakeAt, connection.deadline) }
            // Full: the listeners are watched again once the oldest connection
            // (the first: they are kept in the order accepted) may give its slot up.
            var accepting = true
            if connections.count >= Self.maxConnections, let oldest = connections.first, oldest.accepted + Self.idleBound > now {
                accepting = false
                wakeAt = min(wakeAt, oldest.accepted + Self.idleBound)
            }
            var descriptors = [pollfd(fd: wakeup.readEnd, events: Int16(POLLIN), revents: 0)]
            descriptors += listeners.map { pollfd(fd: $0, events: accepting ? Int16(POLLIN) : 0, revents: 0) }
            descriptors += connections.map { pollfd(fd: $0.fd, events: Int16(POLLIN), revents: 0) }
            let ready = poll(&descriptors, nfds_t(descriptors.count), Self.milliseconds(until: wakeAt, from: clock.now))
            guard ready > 0, descriptors[0].revents == 0 else { continue }

            let firstConnection = 1 + listeners.count
            var finished: Set<Int32> = []
            for (index, descriptor) in descriptors.enumerated().dropFirst(firstConnection) where descriptor.revents != 0 {
                let connection = connections[index - firstConnection]
                switch connection.receive(matcher) {
                case .waiting:
                    continue
                case .closed:
                    connection.close()
                case .answer(let page):
                    connection.respond(pages.response(page))
                case .redirect(let target):
                    connection.respond(pages.response(.received))
                    return .success(target)
                case .tooLong:
                    connection.respond(pages.response(.tooLong))
                    return .failure(
                        OAuth2Error(
                            code: .urlTooLong,
                            message: "the redirect's request line is over \(LoopbackReceiver.maxRequestLine) bytes"
                        ))
                }
                finished.insert(connection.fd)
            }
            connections.removeAll { finished.contains($0.fd) }
            for (index, descriptor) in descriptors.enumerated().dropFirst().prefix(listeners.count)
            where descriptor.revents & Int16(POLLIN) != 0 {
                let acceptedAt = clock.now
                if connections.count >= Self.maxConnections {
                    guard let oldest = connections.first, oldest.accepted + Self.idleBound <= acceptedAt else { continue }
                    oldest.close()
                    connections.removeFirst()
                }
                if let fd = Socket.accept(listeners[index - 1]) {
                    connections.append(ReceiverConnection(fd: fd, accepted: acceptedAt, deadline: acceptedAt + Self.connectionTimeout))
                }
            }
        }
    }

    /// Closes the listening sockets: the port is free once this returns.
    func closeListeners() {
        listeners.forEach(Socket.close)
    }

    private static func ended(by reason: Wakeup.Reason) -> OAuth2Error {
        switch reason {
        case .cancelled:
            OAuth2Error(code: .cancelled, message: "the wait for the redirect was cancelled")
        case .closed:
            OAuth2Error(code: .cancelled, message: "the loopback receiver was closed while waiting for the redirect")
        }
    }

    private static func milliseconds(until instant: ContinuousClock.Instant, from now: ContinuousClock.Instant) -> Int32 {
        let (seconds, attoseconds) = (instant - now).components
        guard seconds >= 0 else { return 0 }
        return Int32(min(seconds * 1000 + attoseconds / 1_000_000_000_000_000 + 1, 60_000))
    }

    /// `300 s`, or `250 ms` below a second or for fractions.
    private static func text(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        guard attoseconds != 0 || seconds == 0 else { return "\(seconds) s" }
        return "\(seconds * 1000 + attoseconds / 1_000_000_000_000_000) ms"
    }
}
