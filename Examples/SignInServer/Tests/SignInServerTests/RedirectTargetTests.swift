import Foundation
import OAuth2
@testable import SignInServerCore
import Testing

/// Where the app sends a browser: to the provider's authorization endpoint,
/// `/` and `/login`, and nowhere else, whatever the request carries (a `next`
/// or `return_to` parameter, another `Host`): no open redirect.
///
/// Needs no provider: the app is configured with endpoints on a host that does
/// not exist, and nothing here reaches them.
@Suite struct RedirectTargetTests {
    static let authorize = "https://idp.invalid/oauth/authorize"

    static func provider() throws -> ProviderEnvironment {
        let json = #"""
            {"issuer": "https://idp.invalid", "access_token_lifetime": 3600, "browser": "",
             "endpoints": {"authorize": "https://idp.invalid/oauth/authorize", "token": "https://idp.invalid/oauth/token",
                           "revoke": "https://idp.invalid/oauth/revoke", "api_me": "https://idp.invalid/api/me",
                           "test_token_requests": "https://idp.invalid/test/token-requests"},
             "clients": {"confidential": {"client_id": "app", "client_secret": "app-secret-0123456789"}},
             "users": {}}
            """#
        return try JSONDecoder().decode(ProviderEnvironment.self, from: Data(json.utf8))
    }

    /// What an attacker would put in a link to make the app bounce a browser elsewhere.
    static let hostileQuery = [
        "next=https%3A%2F%2Fevil.example%2F", "return_to=%2F%2Fevil.example%2F", "redirect=https%3A%2F%2Fevil.example%2F",
        "redirect_uri=https%3A%2F%2Fevil.example%2Fcallback", "url=%2F%5Cevil.example",
    ].joined(separator: "&")
    static let hostileHeaders = [
        ("Host", "evil.example"), ("X-Forwarded-Host", "evil.example"), ("X-Forwarded-Proto", "https"),
        ("Referer", "https://evil.example/"),
    ]

    @Test func theAppRedirectsOnlyToTheProviderTheRootAndLogin() async throws {
        try await TestApp.with(Self.provider()) { app in
            let browser = app.browser()
            var locations: [String] = []
            func record(_ response: HTTPTransportResponse) {
                if let location = response.location { locations.append(location) }
            }
            for path in ["/", "/login", "/me", "/callback", "/login/", "/%2F%2Fevil.example"] {
                record(try await browser.get("\(path)?\(Self.hostileQuery)", headers: Self.hostileHeaders))
                record(try await browser.get(path, headers: Self.hostileHeaders))
            }
            // With a sign-in pending in the session, the callback and a second /login.
            record(try await browser.get("/callback?code=x&state=forged&\(Self.hostileQuery)", headers: Self.hostileHeaders))
            record(try await browser.get("/login?\(Self.hostileQuery)", headers: Self.hostileHeaders))
            record(try await browser.post("/logout?\(Self.hostileQuery)", headers: Self.hostileHeaders))

            #expect(locations.contains("/login"), "GET /me without a session")
            #expect(locations.contains("/"), "POST /logout")
            let allowed = locations.allSatisfy { $0 == "/" || $0 == "/login" || $0.hasPrefix(Self.authorize + "?") }
            #expect(allowed, "\(locations)")

            // The provider is asked to send the browser back to the configured redirect URI, not to one made of the request.
            let toProvider = locations.filter { $0.hasPrefix(Self.authorize + "?") }
            #expect(toProvider.count >= 3)
            for location in toProvider {
                let query = try requireValue(URLComponents(string: location)?.queryItems, "no query in \(location)")
                #expect(query.first { $0.name == "redirect_uri" }?.value == "\(app.baseURL.absoluteString)/callback")
                #expect(!location.contains("evil"))
            }
        }
    }
}
