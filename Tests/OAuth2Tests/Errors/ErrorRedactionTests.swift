import Foundation
import Testing
@testable import OAuth2

/// No error that the flows and parsers produce may carry a secret that was in their input.
@Suite struct ErrorRedactionTests {
    static let accessToken = "SECRET-ACCESS-TOKEN-9f8e7d6c5b4a"
    static let refreshToken = "SECRET-REFRESH-TOKEN-1a2b3c4d5e6f"
    static let code = "SECRET-AUTH-CODE-0a1b2c3d4e5f"
    static let state = "SECRET-STATE-aaaabbbbccccddddeeeeffff000"
    static let verifier = "SECRET-VERIFIER-dBjftJeZ4CVP-mB92K27uhbUJU1p1r"
    static let deviceCode = "SECRET-DEVICE-CODE-GmRhmhcxhwAzkoEq"
    static let secrets = [accessToken, refreshToken, code, state, verifier, deviceCode]

    private var pending: PendingAuthorization {
        PendingAuthorization(
            url: URL(string: "https://id.example.com/authorize?state=\(Self.state)")!,
            state: Self.state,
            codeVerifier: Secret(Self.verifier),
            redirectURI: URL(string: "https://app.example.com/callback")!,
            scopes: [],
            expectedIssuer: "https://id.example.com",
            requiresIssuer: true,
            createdAt: FlowFixtures.requestedAt
        )
    }

    private func redirectErrors() -> [OAuth2Error] {
        let base = "https://app.example.com/callback"
        let redirects = [
            "\(base)?code=\(Self.code)&state=\(Self.state)&pad=" + String(repeating: "x", count: 9000),
            "\(base)?code=\(Self.code) x&state=\(Self.state)",
            "https://evil.example.com/callback?code=\(Self.code)&state=\(Self.state)",
            "\(base)#access_token=\(Self.accessToken)&state=\(Self.state)",
            "\(base)?code=\(Self.code)%ZZ&state=\(Self.state)",
            "\(base)?code=\(Self.code)%0A&state=\(Self.state)",
            "\(base)?code=\(Self.code)&code=\(Self.code)&state=\(Self.state)",
            "\(base)?code=\(Self.code)&state=\(Self.state)x",
            "\(base)?code=\(Self.code)&state=\(Self.state)&iss=https%3A%2F%2Fevil.example.com",
            "\(base)?code=\(Self.code)&state=\(Self.state)",
            "\(base)?access_token=\(Self.accessToken)&state=\(Self.state)&iss=https%3A%2F%2Fid.example.com",
            "\(base)?state=\(Self.state)&iss=https%3A%2F%2Fid.example.com",
        ]
        return redirects.compactMap { redirect in
            FlowFixtures.error { () throws(OAuth2Error) in try RedirectValidator.validate(redirect, pending: pending) }
        }
    }

    private func tokenErrors() -> [OAuth2Error] {
        let token = Self.accessToken
        let refresh = Self.refreshToken
        let responses = [
            FlowFixtures.json(#"{"access_token":"\#(token)","token_type":"mac"}"#),
            FlowFixtures.json(#"{"access_token":"\#(token)","expires_in":"soon"}"#),
            FlowFixtures.json(#"{"access_token":"\#(token)","refresh_token":7}"#),
            FlowFixtures.json(#"{"access_token":"\#(token)","refresh_token":"\#(refresh)","scope":1}"#),
            FlowFixtures.json(#"{"access_token":"\#(token)","refresh_token":"\#(refresh)""#),
            FlowFixtures.json(#"{"access_token":"\#(token)","access_token":"\#(refresh)"}"#),
            FlowFixtures.json(#"{"access_token":"\#(token)\n"}"#),
            FlowFixtures.json(#"["\#(token)"]"#),
            FlowFixtures.json("<html>\(token) \(refresh)</html>", status: 500, contentType: "text/html"),
            FlowFixtures.json("<html>\(token)</html>", contentType: "text/html"),
            FlowFixtures.json("access_token=\(token)&access_token=\(refresh)", contentType: "application/x-www-form-urlencoded"),
            FlowFixtures.json(#"{"access_token":"\#(token)"}"#, status: 302),
            FlowFixtures.json(#"{"access_token":"\#(token)"}"#, status: 429),
        ]
        return responses.compactMap { response in
            FlowFixtures.error { () throws(OAuth2Error) in
                try TokenResponseParser.parse(response, requestedAt: FlowFixtures.requestedAt, requestedScopes: [])
            }
        }
    }

    private func deviceErrors() -> [OAuth2Error] {
        let responses = [
            FlowFixtures.json(#"{"device_code":"\#(Self.deviceCode)","user_code":"A"}"#),
            FlowFixtures.json(
                #"{"device_code":"\#(Self.deviceCode)\n","user_code":"A","verification_uri":"https://e.com","expires_in":5}"#),
        ]
        return responses.compactMap { response in
            FlowFixtures.error { () throws(OAuth2Error) in try DeviceAuthorization.parse(response, requestedAt: FlowFixtures.requestedAt) }
        }
    }

    @Test func noErrorCarriesASecretFromItsInput() {
        let errors = redirectErrors() + tokenErrors() + deviceErrors()
        #expect(errors.count == 12 + 13 + 2)
        for error in errors {
            let texts = [error.message, error.description, String(reflecting: error), error.errorDescription ?? "", error.errorURI ?? ""]
            for text in texts {
                for secret in Self.secrets {
                    #expect(!text.contains(secret), "\(error.code) leaks a secret")
                }
            }
        }
    }
}
