// Why our own sockets and not FlyingFox (swhitty/FlyingFox 0.27.1, the
// maintained SwiftNIO-free HTTP server on the machine's mirrors):
//
// - What we need is tiny: accept a few connections on one or two loopback
//   sockets, read one request line and head under fixed caps, answer one of
//   six static pages, close. That is about 750 lines of code in this folder
//   (comments aside). FlyingFox and FlyingSocks are about 7,800 (12,000 with
//   comments: routing, files, proxying, WebSockets, chunked bodies, a
//   client), which every clean build of an app using this product would
//   compile, on two cores.
// - FlyingFox imports full Foundation (ICU included) in most of its files;
//   this product, like OAuth2, needs FoundationEssentials at most.
// - Its request decoder collects the request line and header lines with no
//   size cap (its 2 MiB replay size is for bodies; the 15 s request timeout
//   is the only bound); we must refuse a line over 16 KiB with a 414 and
//   `url_too_long`, and hold at most 64 KiB per connection.
// - One HTTPServer listens on one address; `localhost` needs 127.0.0.1 and
//   ::1 on the same port, bound together (and retried together when the
//   port is ephemeral).
// - Cancellation: FlyingFox stops when the task running `run()` is
//   cancelled, but we need a different shape — the wait ends on the one
//   request that carries the right `state`, hands back its target, and the
//   port is closed before the call returns. On top of FlyingFox that is a
//   continuation bridge from a route handler, a second server for ::1 and
//   our own size checks: little less code than the poll loop it replaces,
//   plus a dependency.
// Keep ours; revisit if the receiver ever needs more of HTTP than this.

public import OAuth2

#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// Receives the authorization redirect on a loopback address (RFC 8252 §7.3),
/// for command-line and desktop apps that send the user to a browser.
///
/// Create it for the redirect URI before starting the flow, give the provider
/// ``redirectURI`` (which carries the port actually bound), then wait:
///
/// ```swift
/// let receiver = try LoopbackReceiver(redirectURI: URL(string: "http://127.0.0.1/callback")!)
/// let pending = try await client.authorizationURL(redirectURI: receiver.redirectURI)
/// print("Open \(pending.url)")
/// let redirect = try await receiver.redirect(for: pending, timeout: .seconds(300))
/// let token = try await client.authenticate(.authorizationCode(redirect: redirect, pending: pending))
/// ```
///
/// The wait ends only on a `GET` of the exact redirect path whose `state`
/// equals the expected one (compared in constant time). Any other request —
/// another path (browsers ask for `/favicon.ico`), another method, a missing,
/// repeated or forged `state`, an unreadable or over-long request — gets a small
/// error page and the wait goes on, so a local program that knocks first
/// cannot end it. A provider's error redirect (`error=access_denied`) carries
/// the state and ends the wait like a code does; the client then reports it.
///
/// Every page is static: it reflects nothing of the request and is sent with
/// `Cache-Control: no-store` and `Referrer-Policy: no-referrer`.
///
/// Hosts (RFC 8252 §7.3, §8.3): `127.0.0.1` (any `127.0.0.0/8` literal) binds
/// that IPv4 address; `[::1]` binds IPv6 loopback; `localhost` binds both
/// 127.0.0.1 and ::1 on the same port, because the browser resolves the name
/// and may try either first. The name itself is never resolved here, so
/// nothing ever listens beyond loopback — the §8.3 risk of `localhost`. IP
/// literals remain the better choice where the provider accepts them.
///
/// One receiver serves one wait. The sockets are closed when the wait ends
/// (whatever ended it), on ``close()``, or when the receiver is released.
/// Thread-safe.
public final class LoopbackReceiver: Sendable {
    /// The longest request line read: over it the request gets a 414 page,
    /// and a redirect that carries the right `state` ends the wait with `url_too_long`.
    public static let maxRequestLine = 16 * 1024

    /// The redirect URI to send in the authorization request: the one given,
    /// with the port actually bound.
    public let redirectURI: URL
    /// The port bound (the ephemeral one when the redirect URI had none).
    public let port: UInt16

    private let endpoint: LoopbackEndpoint
    private let origin: String
    private let pages: ReceiverPages
    private let phase: LockedValue<Phase>

    /// Where the receiver is in its one-wait life.
    private enum Phase {
        /// Bound and listening; the kernel queues connections until a wait starts.
        case ready(listeners: [Int32])
        /// A wait owns the sockets and closes them when it ends.
        case waiting(Wakeup)
        /// The sockets are closed.
        case closed
    }

    /// Binds the redirect URI's loopback address(es) and starts listening.
    ///
    /// - Parameters:
    ///   - redirectURI: an `http` URI on `127.0.0.1` (or another `127.0.0.0/8`
    ///     literal), `[::1]` or `localhost`, without a fragment. Without a port
    ///     (or with port 0) the kernel picks a free one; ``redirectURI`` then carries it.
    ///   - applicationName: how the pages shown in the browser name the app
    ///     (`"oauth2"`); "this program" when `nil`.
    /// - Throws: ``/OAuth2/OAuth2Error`` `invalid_configuration` when the URI is not
    ///   an `http` loopback URI; `transport_error` when an address cannot be
    ///   bound (the port is in use, or not allowed).
    public init(redirectURI: URL, applicationName: String? = nil) throws(OAuth2Error) {
        let endpoint = try LoopbackEndpoint(redirectURI)
        let bound = try ReceiverSockets.bind(endpoint)
        guard let uris = endpoint.uris(port: bound.port) else {
            bound.listeners.forEach(Socket.close)
            throw OAuth2Error(code: .invalidConfiguration, message: "the redirect URI cannot carry the port \(bound.port)")
        }
        self.endpoint = endpoint
        self.redirectURI = uris.redirectURI
        self.origin = uris.origin
        self.port = bound.port
        self.pages = ReceiverPages(applicationName: applicationName)
        self.phase = LockedValue(.ready(listeners: bound.listeners))
    }

    deinit {
        close()
    }

    /// Waits for the redirect of `pending`, which must have been made for ``redirectURI``.
    ///
    /// - Returns: the redirect, not yet validated: pass it to
    ///   `OAuth2Client.authenticate(.authorizationCode(redirect: _:pending:))`.
    /// - Throws: as ``redirect(state:timeout:)``; `invalid_configuration`
    ///   when `pending.redirectURI` is not ``redirectURI``; `pushed_request_expired`
    ///   when `pending`'s pushed request (RFC 9126) has already expired, so
    ///   that the provider would refuse the URL: start a new authorization.
    public func redirect(for pending: PendingAuthorization, timeout: Duration = .seconds(300)) async throws(OAuth2Error) -> URL {
        guard pending.redirectURI.absoluteString == redirectURI.absoluteString else {
            throw OAuth2Error(
                code: .invalidConfiguration,
                message:
                    "the authorization was started for \(pending.redirectURI.withoutQuery), not for this receiver's \(redirectURI.withoutQuery)"
            )
        }
        guard !pending.isPushedRequestExpired(at: Date()) else {
            throw OAuth2Error(
                code: .pushedRequestExpired,
                message: "the pushed authorization request expired before the browser was sent to it; start a new authorization"
            )
        }
        return try await redirect(state: pending.state, timeout: timeout)
    }

    /// Waits, on a thread of its own, for the `GET` of the redirect path that carries `state`.
    ///
    /// Cancelling the calling task ends the wait at once; so does ``close()``.
    /// Either way, and on every other end, the sockets are closed before this
    /// returns, so the port can be bound again right away.
    ///
    /// - Parameters:
    ///   - state: the `state` sent in the authorization request; not empty.
    ///   - timeout: how long to wait for the browser.
    /// - Returns: the redirect as an absolute URL on the redirect URI's origin,
    ///   not yet validated beyond its path and `state`.
    /// - Throws: ``/OAuth2/OAuth2Error`` `timeout` when it did not arrive in time;
    ///   `cancelled` when the task was cancelled or the receiver closed;
    ///   `url_too_long` when the redirect carrying the state has a request line
    ///   over ``maxRequestLine``; `invalid_redirect_url` when it is not a URL;
    ///   `invalid_configuration` when `state` is empty or the receiver was
    ///   already used; `transport_error` when no thread could be started.
    ///   No message contains the state.
    public func redirect(state: String, timeout: Duration = .seconds(300)) async throws(OAuth2Error) -> URL {
        guard !state.isEmpty else {
            throw OAuth2Error(code: .invalidConfiguration, message: "the expected state is empty")
        }
        let wakeup = try Wakeup()
        let listeners = try start(wakeup)
        let wait = ReceiverWait(
            listeners: listeners,
            wakeup: wakeup,
            matcher: RedirectMatcher(path: endpoint.path, state: state),
            pages: pages,
            redirectURI: redirectURI,
            timeout: timeout
        )
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Result<String, OAuth2Error>, Never>) in
                let started = ReceiverThread.start {
                    continuation.resume(returning: wait.run())
                }
                if let failure = started {
                    wait.closeListeners()
                    continuation.resume(returning: .failure(failure))
                }
            }
        } onCancel: {
            wakeup.signal(.cancelled)
        }
        phase.withLock { $0 = .closed }
        wakeup.close()
        let target = try result.get()
        guard let url = URL(string: origin + target) else {
            throw OAuth2Error(code: .invalidRedirectURL, message: "the redirect's request target is not a URL")
        }
        return url
    }

    /// Closes the sockets; the port is free once this returns, or, when a
    /// wait is in progress, once that wait returns (with `cancelled`).
    ///
    /// Harmless when already closed.
    public func close() {
        let listeners: [Int32] = phase.withLock { phase in
            switch phase {
            case .ready(let listeners):
                phase = .closed
                return listeners
            case .waiting(let wakeup):
                wakeup.signal(.closed)
                return []
            case .closed:
                return []
            }
        }
        listeners.forEach(Socket.close)
    }

    /// The listening sockets while the receiver is ready; none once a wait
    /// has them or they are closed. For the tests, which check what these
    /// sockets are bound to and that they get closed: the port alone can be
    /// shared by a socket on another address, or taken once it is free.
    var listeningDescriptors: [Int32] {
        phase.withLock { phase in
            guard case .ready(let listeners) = phase else { return [] }
            return listeners
        }
    }

    /// Hands the sockets to a wait.
    private func start(_ wakeup: Wakeup) throws(OAuth2Error) -> [Int32] {
        let listeners: [Int32]? = phase.withLock { phase in
            guard case .ready(let listeners) = phase else { return nil }
            phase = .waiting(wakeup)
            return listeners
        }
        guard let listeners else {
            wakeup.close()
            throw OAuth2Error(code: .invalidConfiguration, message: "this receiver already waited or was closed; create a new one")
        }
        return listeners
    }
}
