public import OAuth2

#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// A ``/OAuth2/ProtectedResourceClient``'s redirect handler for a command-line
/// or desktop app: each authorization is received on a loopback address
/// (RFC 8252 §7.3) by a ``LoopbackReceiver`` of its own, on one port for the
/// handler's whole life, so that the redirect URI a registration names stays valid.
///
/// ```swift
/// let handler = try LoopbackRedirectHandler(redirectURI: URL(string: "http://127.0.0.1/callback")!) { url in
///     print("Open \(url)")
/// }
/// let client = ProtectedResourceClient(identity: identity, redirectHandler: handler, store: store, transport: transport)
/// ```
///
/// Thread-safe; authorizations through one handler run one at a time (one
/// port), a second waits for the first.
public final class LoopbackRedirectHandler: AuthorizationRedirectHandler {
    /// The redirect URI, with the port bound when the handler was made.
    public let redirectURI: URL
    private let applicationName: String?
    private let timeout: Duration
    private let present: @Sendable (URL) async throws(OAuth2Error) -> Void
    /// The receiver bound at creation (which fixed the port), used by the first authorization.
    private let first: LockedValue<LoopbackReceiver?>
    /// Serializes authorizations: one port serves one wait at a time.
    private let turn = AsyncTurn()

    /// Binds the redirect URI's loopback address now (a URI without a port
    /// gets one from the kernel, kept from then on).
    ///
    /// - Parameters:
    ///   - redirectURI: an `http` loopback URI (see ``LoopbackReceiver/init(redirectURI:applicationName:)``).
    ///   - applicationName: how the browser pages name the app.
    ///   - timeout: how long each authorization waits for the browser.
    ///   - present: shows the user the authorize URL (prints it, opens a
    ///     browser); called once per authorization, after the address is
    ///     bound, so that the browser can come back at once. Throw to give up.
    /// - Throws: the receiver's errors (`invalid_configuration`, `transport_error`).
    public init(
        redirectURI: URL, applicationName: String? = nil, timeout: Duration = .seconds(300),
        present: @escaping @Sendable (URL) async throws(OAuth2Error) -> Void
    ) throws(OAuth2Error) {
        let receiver = try LoopbackReceiver(redirectURI: redirectURI, applicationName: applicationName)
        self.redirectURI = receiver.redirectURI
        self.applicationName = applicationName
        self.timeout = timeout
        self.present = present
        self.first = LockedValue(receiver)
    }

    /// Shows the user `pending.url` and waits on the loopback address for the redirect.
    ///
    /// - Throws: the receiver's errors (`timeout`, `cancelled`, …) and `present`'s.
    public func redirect(for pending: PendingAuthorization) async throws(OAuth2Error) -> URL {
        await turn.acquire()
        defer { turn.release() }
        let receiver: LoopbackReceiver
        if let bound = first.withLock({ receiver -> LoopbackReceiver? in
            defer { receiver = nil }
            return receiver
        }) {
            receiver = bound
        } else {
            receiver = try LoopbackReceiver(redirectURI: redirectURI, applicationName: applicationName)
        }
        defer { receiver.close() }
        try await present(pending.url)
        return try await receiver.redirect(for: pending, timeout: timeout)
    }
}

/// A first-come lock for async callers, without holding a thread while waiting.
final class AsyncTurn: Sendable {
    private struct State {
        var held = false
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = LockedValue(State())

    func acquire() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let acquired = state.withLock { state -> Bool in
                guard state.held else {
                    state.held = true
                    return true
                }
                state.waiters.append(continuation)
                return false
            }
            if acquired { continuation.resume() }
        }
    }

    func release() {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard !state.waiters.isEmpty else {
                state.held = false
                return nil
            }
            return state.waiters.removeFirst()
        }
        next?.resume()
    }
}
