import Foundation
import Testing
@testable import OAuth2

/// The form post of "Incorporating Sign in with Apple into other platforms"
/// (and OAuth 2.0 Form Post Response Mode): `code`, `state`, `id_token` and,
/// on the first sign-in, `user`, posted as application/x-www-form-urlencoded.
@Suite struct FormPostResponseTests {
    static let state = "state-0123456789abcdefghijklmnopqrstuvwxyzABC"
    static let code = "c1a2b3c4d5.0.abcd.SplxlOBeZQQYbYS6WxSbIA"

    static func pending(expectedIssuer: String? = nil, requiresIssuer: Bool = false) -> PendingAuthorization {
        PendingAuthorization(
            url: URL(string: "https://appleid.apple.com/auth/authorize?state=\(state)")!,
            state: state,
            codeVerifier: Secret("verifier-dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gF"),
            redirectURI: URL(string: "https://app.example.com/apple/callback")!,
            scopes: ["openid", "name", "email"],
            expectedIssuer: expectedIssuer,
            requiresIssuer: requiresIssuer,
            createdAt: FlowFixtures.requestedAt
        )
    }

    static let user = #"{"name":{"firstName":"Jane","lastName":"Appleseed"},"email":"x7@privaterelay.appleid.com"}"#

    static func body(_ fields: [(String, String)]) -> String {
        FormURLEncoding.encode(fields)
    }

    static func codeError(_ body: String, _ pending: PendingAuthorization = pending()) -> OAuth2Error? {
        let error = FlowFixtures.error { () throws(OAuth2Error) in try FormPostResponse(body: body).code(for: pending) }
        #expect(error.map { !$0.message.contains(code) && !$0.message.contains(state) } ?? true)
        return error
    }

    @Test func aFirstSignInYieldsTheCodeAndTheUser() throws {
        let response = try FormPostResponse(
            body: Self.body([("code", Self.code), ("id_token", "eyJ.eyJ.sig"), ("state", Self.state), ("user", Self.user)]))
        #expect(try response.code(for: Self.pending()).value == Self.code)
        #expect(response.user == UnverifiedUser(firstName: "Jane", lastName: "Appleseed", email: "x7@privaterelay.appleid.com"))
        #expect(response.parameterNames == ["code", "id_token", "state", "user"])
        #expect(response.state == Self.state)
    }

    @Test func aLaterSignInHasNoUser() throws {
        let response = try FormPostResponse(body: Self.body([("state", Self.state), ("code", Self.code)]))
        #expect(response.user == nil)
        #expect(try response.code(for: Self.pending()).value == Self.code)
    }

    @Test func theBodyMayComeAsBytesWithPlusForSpace() throws {
        let response = try FormPostResponse(body: Data("code=a+b%2Bc&state=\(Self.state)\r\n".utf8))
        #expect(try response.code(for: Self.pending()).value == "a b+c")
    }

    @Test func theRedirectsChecksApplyInTheirOrder() {
        #expect(Self.codeError(Self.body([("code", Self.code)]))?.code == .stateMismatch)
        #expect(Self.codeError(Self.body([("code", Self.code), ("state", "other")]))?.code == .stateMismatch)
        #expect(Self.codeError(Self.body([("state", Self.state)]))?.code == .missingCode)
        #expect(
            Self.codeError(Self.body([("state", Self.state), ("code", Self.code), ("access_token", "t")]))?.code == .unexpectedResponse)
        let cancelled = Self.codeError(Self.body([("error", "user_cancelled_authorize"), ("state", Self.state)]))
        #expect(cancelled?.code.rawValue == "user_cancelled_authorize")
        // A forged refusal without the state is the state's problem first.
        #expect(Self.codeError(Self.body([("error", "user_cancelled_authorize")]))?.code == .stateMismatch)
    }

    @Test func issIsComparedWhenSentAndRequiredWhenPromised() {
        let issuer = "https://appleid.apple.com"
        #expect(
            Self.codeError(
                Self.body([("state", Self.state), ("code", Self.code), ("iss", "https://evil.example")]),
                Self.pending(expectedIssuer: issuer))?
                .code == .issuerMismatch)
        #expect(
            Self.codeError(
                Self.body([("state", Self.state), ("code", Self.code)]), Self.pending(expectedIssuer: issuer, requiresIssuer: true))?
                .code == .missingIssuer)
    }

    @Test func malformedRepeatedOrOversizedBodiesAreRefused() {
        func parse(_ body: String) -> OAuth2Error? { FlowFixtures.error { () throws(OAuth2Error) in try FormPostResponse(body: body) } }
        #expect(parse("state=\(Self.state)&state=\(Self.state)&code=x")?.code == .duplicateParameter)
        #expect(parse("state=%zz&code=x")?.code == .invalidParameter)
        #expect(parse("state=a%0Ab&code=x")?.code == .invalidParameter)
        #expect(parse("code=caf%C3%A9&state=\(Self.state)")?.code == .invalidParameter)
        #expect(
            parse("code=x&state=\(Self.state)&pad=" + String(repeating: "a", count: FormPostResponse.maxBodySize))?.code
                == .responseTooLarge)
        let invalidUTF8 = FlowFixtures.error { () throws(OAuth2Error) in try FormPostResponse(body: Data([0x63, 0x3D, 0xFF])) }
        #expect(invalidUTF8?.code == .invalidParameter)
    }

    @Test func aBadUserNeverFailsTheSignIn() throws {
        for user in ["not json", "[1]", #"{"name":"Jane"}"#, String(repeating: "{", count: 100), "{}", #"{"email":42}"#] {
            let response = try FormPostResponse(body: Self.body([("state", Self.state), ("code", Self.code), ("user", user)]))
            #expect(response.user == nil)
            #expect(try response.code(for: Self.pending()).value == Self.code)
        }
    }

    @Test func itsDescriptionAndMirrorNameParametersOnly() throws {
        let response = try FormPostResponse(body: Self.body([("state", Self.state), ("code", Self.code), ("user", Self.user)]))
        for text in [
            response.description, String(reflecting: response),
            {
                var s = ""
                dump(response, to: &s)
                return s
            }(),
        ] {
            #expect(!text.contains(Self.code))
            #expect(!text.contains(Self.state))
            #expect(!text.contains("Appleseed"))
        }
    }

    @Test func theGrantValidatesAPostOnceAcrossTheProvider() async throws {
        let harness = try ClientHarness()
        harness.transport.enqueue(json: Fixture.tokenJSON(), for: Fixture.tokenURL)
        let pending = try await harness.provider.authorizationURL(redirectURI: Fixture.redirectURI)
        let body = Self.body([("state", pending.state), ("code", "the-code")])
        let token = try await harness.provider.token(for: .authorizationCode(formPost: try FormPostResponse(body: body), pending: pending))
        #expect(token.accessToken.value == Fixture.accessToken)
        let sent = Fixture.formFields(harness.tokenRequests.first?.body)
        #expect(sent["code"] == "the-code")
        #expect(sent["redirect_uri"] == Fixture.redirectURI.absoluteString)
        let replay = await oauth2Error {
            _ = try await harness.provider.token(for: .authorizationCode(formPost: try FormPostResponse(body: body), pending: pending))
        }
        #expect(replay?.code == .stateMismatch)
        #expect(harness.tokenRequests.count == 1)
    }

    @Test func aClientFinishesItsOwnPendingAuthorizationFromAPost() async throws {
        let harness = try ClientHarness()
        harness.transport.enqueue(json: Fixture.tokenJSON(), for: Fixture.tokenURL)
        let client = harness.client()
        let pending = try await client.authorizationURL(redirectURI: Fixture.redirectURI)
        let response = try FormPostResponse(body: Self.body([("state", pending.state), ("code", "c")]))
        try await client.authenticate(.authorizationCode(formPost: response))
        #expect(client.currentToken?.accessToken.value == Fixture.accessToken)
    }
}
