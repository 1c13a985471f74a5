import Foundation
import Testing
@testable import OAuth2

@Suite struct RedirectValidatorTests {
    static let state = "state-0123456789abcdefghijklmnopqrstuvwxyzABC"
    static let code = "code-SplxlOBeZQQYbYS6WxSbIA"

    private func pending(
        redirectURI: String = "https://app.example.com/callback",
        expectedIssuer: String? = nil,
        requiresIssuer: Bool = false
    ) -> PendingAuthorization {
        PendingAuthorization(
            url: URL(string: "https://id.example.com/authorize?state=\(Self.state)")!,
            state: Self.state,
            codeVerifier: Secret("verifier-dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gF"),
            redirectURI: URL(string: redirectURI)!,
            scopes: ["openid"],
            expectedIssuer: expectedIssuer,
            requiresIssuer: requiresIssuer,
            createdAt: FlowFixtures.requestedAt
        )
    }

    private func validate(_ redirect: String, _ pending: PendingAuthorization? = nil) throws(OAuth2Error) -> Secret {
        try RedirectValidator.validate(redirect, pending: pending ?? self.pending())
    }

    private func code(of redirect: String, _ pending: PendingAuthorization? = nil) -> OAuth2Error.Code? {
        let error = FlowFixtures.error { () throws(OAuth2Error) in try validate(redirect, pending) }
        if let error {
            #expect(!error.message.contains(Self.code))
            #expect(!error.message.contains(Self.state))
        }
        return error?.code
    }

    private var good: String { "https://app.example.com/callback?code=\(Self.code)&state=\(Self.state)" }

    // MARK: accepted redirects

    @Test func returnsTheCode() throws {
        #expect(try validate(good).value == Self.code)
    }

    @Test func acceptsParametersInAnyOrderWithExtras() throws {
        let redirect = "https://app.example.com/callback?session_state=x&state=\(Self.state)&code=\(Self.code)"
        #expect(try validate(redirect).value == Self.code)
    }

    @Test func decodesAPercentEncodedCode() throws {
        #expect(try validate("https://app.example.com/callback?code=a%2Fb%2Bc+d&state=\(Self.state)").value == "a/b+c d")
    }

    @Test func ignoresWhitespaceAroundAPastedURL() throws {
        #expect(try validate("  \(good)\n").value == Self.code)
        #expect(try validate("\(good)\r\n").value == Self.code)
    }

    @Test func comparesSchemeAndHostCaseInsensitively() throws {
        #expect(try validate("HTTPS://App.Example.COM/callback?code=\(Self.code)&state=\(Self.state)").value == Self.code)
    }

    @Test func treatsDefaultPortsAsEqual() throws {
        #expect(try validate("https://app.example.com:443/callback?code=\(Self.code)&state=\(Self.state)").value == Self.code)
        let httpPending = pending(redirectURI: "http://127.0.0.1:80/cb")
        #expect(try validate("http://127.0.0.1/cb?code=\(Self.code)&state=\(Self.state)", httpPending).value == Self.code)
    }

    @Test func acceptsALoopbackRedirectWithItsPort() throws {
        let loopback = pending(redirectURI: "http://127.0.0.1:53682/callback")
        #expect(try validate("http://127.0.0.1:53682/callback?code=\(Self.code)&state=\(Self.state)", loopback).value == Self.code)
    }

    @Test func acceptsAPrivateUseSchemeRedirect() throws {
        let app = pending(redirectURI: "com.example.app:/oauth2redirect")
        #expect(try validate("com.example.app:/oauth2redirect?code=\(Self.code)&state=\(Self.state)", app).value == Self.code)
    }

    @Test func ignoresAFragmentWithoutTokens() throws {
        #expect(try validate("\(good)#_=_").value == Self.code)
    }

    // MARK: the rules, in order

    @Test func refusesAnOverlongURL() {
        let long = good + "&pad=" + String(repeating: "a", count: RedirectValidator.maxLength)
        #expect(code(of: long) == .urlTooLong)
    }

    @Test func refusesSomethingThatIsNotAnAbsoluteURL() {
        #expect(code(of: "") == .invalidRedirectURL)
        #expect(code(of: "   \n") == .invalidRedirectURL)
        #expect(code(of: "/callback?code=x&state=\(Self.state)") == .invalidRedirectURL)
        #expect(code(of: "code=x&state=\(Self.state)") == .invalidRedirectURL)
        #expect(code(of: "https:///callback?code=x&state=\(Self.state)") == .invalidRedirectURL)
        #expect(code(of: "https://app.example.com:port/callback?code=x&state=\(Self.state)") == .invalidRedirectURL)
        #expect(code(of: "https://app.example.com/call back?code=x&state=\(Self.state)") == .invalidRedirectURL)
        #expect(code(of: "https://app.example.com/callback?code=x\n&state=\(Self.state)") == .invalidRedirectURL)
    }

    @Test func refusesAMismatchedScheme() {
        #expect(code(of: "http://app.example.com/callback?code=x&state=\(Self.state)") == .redirectURIMismatch)
    }

    @Test func refusesAMismatchedHost() {
        #expect(code(of: "https://evil.example.com/callback?code=x&state=\(Self.state)") == .redirectURIMismatch)
        #expect(code(of: "https://app.example.com.evil.com/callback?code=x&state=\(Self.state)") == .redirectURIMismatch)
        #expect(code(of: "https://evil.com@app.example.com/callback?code=x&state=\(Self.state)") == .redirectURIMismatch)
    }

    @Test func refusesAMismatchedPort() {
        #expect(code(of: "https://app.example.com:8443/callback?code=x&state=\(Self.state)") == .redirectURIMismatch)
        let loopback = pending(redirectURI: "http://127.0.0.1:53682/callback")
        #expect(code(of: "http://127.0.0.1:53683/callback?code=x&state=\(Self.state)", loopback) == .redirectURIMismatch)
        #expect(code(of: "http://127.0.0.1/callback?code=x&state=\(Self.state)", loopback) == .redirectURIMismatch)
    }

    @Test func refusesAMismatchedPath() {
        #expect(code(of: "https://app.example.com/callback2?code=x&state=\(Self.state)") == .redirectURIMismatch)
        #expect(code(of: "https://app.example.com/callback/?code=x&state=\(Self.state)") == .redirectURIMismatch)
        #expect(code(of: "https://app.example.com/Callback?code=x&state=\(Self.state)") == .redirectURIMismatch)
        #expect(code(of: "https://app.example.com/?code=x&state=\(Self.state)") == .redirectURIMismatch)
    }

    @Test func mismatchComesBeforeStateAndCode() {
        #expect(code(of: "https://evil.example.com/callback?error=access_denied") == .redirectURIMismatch)
    }

    @Test func refusesTokensDeliveredInTheFragment() {
        for name in ["access_token", "id_token", "token_type", "code"] {
            #expect(code(of: "https://app.example.com/callback#\(name)=abc&state=\(Self.state)") == .unexpectedResponse, "\(name)")
        }
        #expect(code(of: "\(good)#access_token=abc") == .unexpectedResponse)
    }

    @Test func refusesMalformedPercentEscapes() {
        #expect(code(of: "https://app.example.com/callback?code=a%zz&state=\(Self.state)") == .invalidParameter)
        #expect(code(of: "https://app.example.com/callback?code=a%2&state=\(Self.state)") == .invalidParameter)
        #expect(code(of: "https://app.example.com/callback?code=%FF&state=\(Self.state)") == .invalidParameter)
    }

    @Test func refusesEncodedControlCharacters() {
        #expect(code(of: "https://app.example.com/callback?code=a%0Ab&state=\(Self.state)") == .invalidParameter)
        #expect(code(of: "https://app.example.com/callback?code=a%00&state=\(Self.state)") == .invalidParameter)
        #expect(code(of: "https://app.example.com/callback?code=x&state=\(Self.state)&error_description=a%1B%5B31m") == .invalidParameter)
        #expect(code(of: "https://app.example.com/callback?code=x&state=\(Self.state)&x=%C2%85") == .invalidParameter)
    }

    @Test func refusesACodeOrStateOutsideVSCHAR() throws {
        // RFC 6749 Appendix A: code and state are 1*VSCHAR, %x20-7E; anything
        // else did not come from this client's request or a conforming provider.
        for value in ["caf%C3%A9", "caf\u{E9}", "%E2%80%8Bzero-width", "%F0%9F%94%91", "tab%09x"] {
            #expect(code(of: "https://app.example.com/callback?code=\(value)&state=\(Self.state)") == .invalidParameter, "code \(value)")
            #expect(
                code(of: "https://app.example.com/callback?code=\(Self.code)&state=\(Self.state)\(value)") == .invalidParameter,
                "state \(value)")
        }
        // Every VSCHAR, space included, is still a code.
        #expect(try validate("https://app.example.com/callback?code=a+b%7E%21%22%5C&state=\(Self.state)").value == "a b~!\"\\")
    }

    @Test func refusesADuplicatedParameter() {
        #expect(code(of: "\(good)&code=other") == .duplicateParameter)
        #expect(code(of: "\(good)&state=\(Self.state)") == .duplicateParameter)
        #expect(code(of: "\(good)&extra=1&extra=2") == .duplicateParameter)
    }

    @Test func refusesAMissingState() {
        #expect(code(of: "https://app.example.com/callback?code=x") == .stateMismatch)
        #expect(code(of: "https://app.example.com/callback") == .stateMismatch)
    }

    @Test func refusesAnEmptyState() {
        #expect(code(of: "https://app.example.com/callback?code=x&state=") == .stateMismatch)
        #expect(code(of: "https://app.example.com/callback?code=x&state") == .stateMismatch)
    }

    @Test func refusesADifferentState() {
        #expect(code(of: "https://app.example.com/callback?code=x&state=\(Self.state)X") == .stateMismatch)
        #expect(code(of: "https://app.example.com/callback?code=x&state=\(Self.state.dropLast())") == .stateMismatch)
        #expect(code(of: "https://app.example.com/callback?code=x&state=\(Self.state.uppercased())") == .stateMismatch)
    }

    @Test func errorWithStateIsTheProvidersError() {
        let error = FlowFixtures.error { () throws(OAuth2Error) in
            try validate(
                "https://app.example.com/callback?error=access_denied&error_description=The+user+said+no&error_uri=https%3A%2F%2Fid.example.com%2Fhelp&state=\(Self.state)"
            )
        }
        #expect(error?.code == .accessDenied)
        #expect(error?.errorDescription == "The user said no")
        #expect(error?.errorURI == "https://id.example.com/help")
        #expect(error?.message == "The user said no")
    }

    @Test(arguments: [
        // Control characters are refused in any parameter, before the error is read.
        ("access_denied%1B%5B31m", OAuth2Error.Code.invalidParameter), ("access%0Adenied", .invalidParameter),
        ("acc%22ess", .invalidRedirectURL), ("acc%5Cess", .invalidRedirectURL), ("caf%C3%A9", .invalidRedirectURL),
        (String(repeating: "x", count: 129), .invalidRedirectURL),
    ])
    func anErrorOutsideRFC6749sCharactersIsRefusedNotShown(error: String, code: OAuth2Error.Code) {
        let failure = FlowFixtures.error { () throws(OAuth2Error) in
            try validate("https://app.example.com/callback?error=\(error)&state=\(Self.state)")
        }
        #expect(failure?.code == code)
        #expect(failure?.message.contains("access") == false)
        #expect(failure?.message.contains("caf") == false)
    }

    @Test func anErrorURIThatIsNotHTTPIsDropped() {
        let error = FlowFixtures.error { () throws(OAuth2Error) in
            try validate("https://app.example.com/callback?error=access_denied&error_uri=javascript%3Aalert(1)&state=\(Self.state)")
        }
        #expect(error?.code == .accessDenied)
        #expect(error?.errorURI == nil)
    }

    @Test func errorWithoutStateIsAStateMismatch() {
        #expect(code(of: "https://app.example.com/callback?error=access_denied") == .stateMismatch)
    }

    @Test func errorTakesPrecedenceOverCode() {
        #expect(code(of: "\(good)&error=server_error") == "server_error")
    }

    @Test func refusesAnIssuerOtherThanExpected() {
        let expecting = pending(expectedIssuer: "https://id.example.com")
        #expect(code(of: "\(good)&iss=https%3A%2F%2Fevil.example.com", expecting) == .issuerMismatch)
        #expect(code(of: "\(good)&iss=https%3A%2F%2Fid.example.com%2F", expecting) == .issuerMismatch)
    }

    @Test func acceptsTheExpectedIssuer() throws {
        let expecting = pending(expectedIssuer: "https://id.example.com", requiresIssuer: true)
        #expect(try validate("\(good)&iss=https%3A%2F%2Fid.example.com", expecting).value == Self.code)
    }

    @Test func refusesAMissingIssuerWhenRequired() {
        let requiring = pending(expectedIssuer: "https://id.example.com", requiresIssuer: true)
        #expect(code(of: good, requiring) == .missingIssuer)
        #expect(code(of: "\(good)&iss=", requiring) == .missingIssuer)
    }

    @Test func acceptsAMissingIssuerWhenNotRequired() throws {
        #expect(try validate(good, pending(expectedIssuer: "https://id.example.com")).value == Self.code)
    }

    @Test func ignoresAnIssuerWhenNoneIsExpected() throws {
        #expect(try validate("\(good)&iss=https%3A%2F%2Fanything.example.com").value == Self.code)
    }

    @Test func issuerIsCheckedBeforeTheError() {
        let expecting = pending(expectedIssuer: "https://id.example.com")
        let redirect = "https://app.example.com/callback?error=access_denied&state=\(Self.state)&iss=https%3A%2F%2Fevil.example.com"
        #expect(code(of: redirect, expecting) == .issuerMismatch)
    }

    @Test func refusesAnAccessTokenInTheQuery() {
        #expect(code(of: "\(good)&access_token=abc") == .unexpectedResponse)
        #expect(code(of: "https://app.example.com/callback?access_token=abc&state=\(Self.state)") == .unexpectedResponse)
    }

    @Test func refusesAMissingCode() {
        #expect(code(of: "https://app.example.com/callback?state=\(Self.state)") == .missingCode)
    }

    @Test func refusesAnEmptyCode() {
        #expect(code(of: "https://app.example.com/callback?code=&state=\(Self.state)") == .missingCode)
        #expect(code(of: "https://app.example.com/callback?code&state=\(Self.state)") == .missingCode)
    }
}
