import Foundation
import OAuth2
import OAuth2Loopback
import Synchronization

/// The CLI's way of sending its user to sign in (RFC 8252): a loopback
/// receiver on 127.0.0.1, a port the kernel picks, and the authorization URL
/// shown to the user (`present`). A ``LoopbackReceiver`` waits once, so each
/// sign-in binds a fresh one the first time ``redirectURI`` is asked for;
/// the provider accepts any port on a loopback redirect URI.
public final class LoopbackRedirectHandler: AuthorizationRedirectHandler {
    let present: @Sendable (URL) -> Void
    let timeout: Duration
    let receiver = Mutex<LoopbackReceiver?>(nil)

    /// Creates a handler that calls `present` with each authorization URL
    /// (print it, open a browser) and waits at most `timeout` for the redirect.
    public init(timeout: Duration = .seconds(300), present: @escaping @Sendable (URL) -> Void) {
        self.timeout = timeout
        self.present = present
    }

    /// The redirect URI of the receiver the next sign-in uses; binds one when
    /// there is none. `http://127.0.0.1/callback` when none can be bound, so
    /// that ``redirect(for:)`` reports the error.
    public var redirectURI: URL {
        receiver.withLock { current in
            if current == nil {
                current = try? LoopbackReceiver(redirectURI: Self.base, applicationName: "MCPClient")
            }
            return current?.redirectURI ?? Self.base
        }
    }

    /// Shows the URL and waits for the browser to come back to the receiver.
    public func redirect(for pending: PendingAuthorization) async throws(OAuth2Error) -> URL {
        guard
            let receiver = receiver.withLock({ current in
                defer { current = nil }
                return current
            })
        else {
            throw OAuth2Error(code: .invalidConfiguration, message: "no loopback receiver is listening for this authorization")
        }
        defer { receiver.close() }
        present(pending.url)
        return try await receiver.redirect(for: pending, timeout: timeout)
    }

    static let base = URL(string: "http://127.0.0.1/callback")!
}
