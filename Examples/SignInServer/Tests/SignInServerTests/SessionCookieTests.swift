@testable import SignInServerCore
import Testing

/// The session cookie's attributes; no provider needed.
struct SessionCookieTests {
    @Test func overHTTPSTheCookieIsSecureAndHostPrefixed() {
        let cookie = SessionCookie(secure: true).setting("id")
        #expect(cookie.name.hasPrefix("__Host-"))
        #expect(cookie.secure)
        #expect(cookie.httpOnly)
        #expect(cookie.sameSite == .lax)
        #expect(cookie.path == "/")
        #expect(cookie.domain == nil)
    }

    @Test func overHTTPTheCookieIsNotSecureButStillHttpOnlyAndLax() {
        let cookie = SessionCookie(secure: false).setting("id")
        #expect(!cookie.name.hasPrefix("__Host-"))
        #expect(!cookie.secure)
        #expect(cookie.httpOnly)
        #expect(cookie.sameSite == .lax)
    }

    @Test func clearingTheCookieExpiresIt() {
        let cookie = SessionCookie(secure: true).clearing()
        #expect(cookie.maxAge == 0)
        #expect(cookie.value.isEmpty)
    }
}
