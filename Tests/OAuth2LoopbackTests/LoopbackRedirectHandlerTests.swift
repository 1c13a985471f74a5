import Foundation
import OAuth2
import OAuth2Loopback
import Testing

/// The loopback receiver as a ``ProtectedResourceClient``'s redirect handler.
@Suite struct LoopbackRedirectHandlerTests {
    private func pending(_ state: String, _ redirectURI: URL) -> PendingAuthorization {
        PendingAuthorization(
            url: URL(string: "https://auth.example/authorize?state=\(state)")!, state: state, codeVerifier: Secret("v"),
            redirectURI: redirectURI, scopes: [], expectedIssuer: nil, requiresIssuer: false, createdAt: Date())
    }

    @Test func eachAuthorizationIsPresentedAndReceivedOnTheSamePort() async throws {
        let presented = LockedValue<[URL]>([])
        // The browser comes back to the handler's redirect URI, known once it is made.
        let redirectURI = LockedValue<String>("")
        let handler = try LoopbackRedirectHandler(redirectURI: URL(string: "http://127.0.0.1/callback")!) { url in
            presented.withLock { $0.append(url) }
            let state = URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems?.first { $0.name == "state" }?.value ?? ""
            let back = redirectURI.withLock { $0 }
            Task { _ = try? await Probe.request("\(back)?code=c-\(state)&state=\(state)") }
        }
        redirectURI.withLock { $0 = handler.redirectURI.absoluteString }
        let port = try #require(handler.redirectURI.port)
        #expect(port != 0)
        for state in ["first-state-0123456789abcdef", "second-state-0123456789abcdef"] {
            let redirect = try await handler.redirect(for: pending(state, handler.redirectURI))
            #expect(redirect.absoluteString == "http://127.0.0.1:\(port)/callback?code=c-\(state)&state=\(state)")
        }
        #expect(presented.withLock { $0.count } == 2)
    }

    @Test func aPresenterThatGivesUpEndsTheAuthorizationWithItsError() async throws {
        let handler = try LoopbackRedirectHandler(redirectURI: URL(string: "http://127.0.0.1/callback")!) { _ throws(OAuth2Error) in
            throw OAuth2Error(code: .cancelled, message: "the user closed the prompt")
        }
        let error = await #expect(throws: OAuth2Error.self) {
            _ = try await handler.redirect(for: pending("state-0123456789abcdef0123", handler.redirectURI))
        }
        #expect(error?.code == .cancelled)
    }
}
