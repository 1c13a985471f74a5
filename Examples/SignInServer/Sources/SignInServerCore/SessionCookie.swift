import Foundation
import Hummingbird

/// The cookie that carries the session id, and nothing else.
///
/// `HttpOnly` (no script reads it), `SameSite=Lax` (not sent with
/// cross-site POSTs, so a foreign page cannot sign a user out; sent on the
/// top-level GET back from the provider, so the callback finds its session),
/// `Path=/`, no `Domain`, and no `Max-Age` (it ends with the browser session).
/// Over https it is also `Secure` and named with the `__Host-` prefix, which
/// browsers accept only from a secure origin without `Domain`, so a
/// subdomain cannot plant one.
struct SessionCookie: Sendable {
    /// Whether the app is served over https.
    let secure: Bool

    /// The cookie's name.
    var name: String { secure ? "__Host-signin-session" : "signin-session" }

    /// The session id the request carries, if any.
    func sessionID(in request: Request) -> String? {
        guard let value = request.cookies[name]?.value, !value.isEmpty else { return nil }
        return value
    }

    /// The cookie that sets a session id.
    func setting(_ sessionID: String) -> Cookie {
        Cookie(name: name, value: sessionID, path: "/", secure: secure, httpOnly: true, sameSite: .lax)
    }

    /// The cookie that makes the browser forget the session id.
    func clearing() -> Cookie {
        Cookie(name: name, value: "", maxAge: 0, path: "/", secure: secure, httpOnly: true, sameSite: .lax)
    }
}
