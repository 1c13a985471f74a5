import Foundation
import Testing
@testable import OAuth2

@Suite struct TokenResponseParserTests {
    static let token = "2YotnFZFEjr1zCsicMWpAA-access"
    static let refresh = "tGzv3JOkF0XG5Qx2TlKWIA-refresh"

    private func parse(_ response: HTTPTransportResponse, scopes: [String] = ["read"], maxBodySize: Int = 1 << 20) throws(OAuth2Error)
        -> AccessToken
    {
        try TokenResponseParser.parse(response, requestedAt: FlowFixtures.requestedAt, requestedScopes: scopes, maxBodySize: maxBodySize)
    }

    private func parse(json body: String) throws(OAuth2Error) -> AccessToken {
        try parse(FlowFixtures.json(body))
    }

    private func error(_ response: HTTPTransportResponse) -> OAuth2Error? {
        let error = FlowFixtures.error { () throws(OAuth2Error) in try parse(response) }
        if let error {
            for text in [error.message, error.description, error.errorDescription ?? ""] {
                #expect(!text.contains(Self.token))
                #expect(!text.contains(Self.refresh))
            }
        }
        return error
    }

    private func error(json body: String) -> OAuth2Error? {
        error(FlowFixtures.json(body))
    }

    // MARK: a good response

    @Test func parsesTheRFC6749Example() throws {
        let token = try parse(json: #"{"access_token":"\#(Self.token)","token_type":"Bearer","expires_in":3600}"#)
        #expect(token.accessToken.value == Self.token)
        #expect(token.tokenType == "Bearer")
        #expect(token.expiresAt == FlowFixtures.requestedAt.addingTimeInterval(3600))
        #expect(token.refreshToken == nil)
        #expect(token.scopes == ["read"])
    }

    @Test func keepsRefreshTokenScopesAndExtraFields() throws {
        let token = try parse(
            json: """
                {"access_token":"\(Self.token)","token_type":"Bearer","expires_in":3600,"refresh_token":"\(Self.refresh)",
                 "scope":"openid  profile email","id_token":"eyJ.x.y","user":{"id":7}}
                """)
        #expect(token.refreshToken?.value == Self.refresh)
        #expect(token.scopes == ["openid", "profile", "email"])
        #expect(token.extraFields == ["id_token": .string("eyJ.x.y"), "user": .object(["id": .number(7)])])
    }

    @Test func tokenDescriptionIsRedacted() throws {
        let token = try parse(json: #"{"access_token":"\#(Self.token)","refresh_token":"\#(Self.refresh)"}"#)
        #expect(!"\(token)".contains(Self.token))
        #expect(!"\(token)".contains(Self.refresh))
    }

    // MARK: access_token

    @Test func refusesAMissingAccessToken() {
        #expect(error(json: #"{"token_type":"Bearer"}"#)?.code == .invalidTokenResponse)
    }

    @Test func refusesANonStringAccessToken() {
        for value in ["42", "null", "true", "[\"a\"]", "{\"a\":1}"] {
            #expect(error(json: #"{"access_token":\#(value),"token_type":"Bearer"}"#)?.code == .invalidTokenResponse, "\(value)")
        }
    }

    @Test func refusesAnEmptyAccessToken() {
        #expect(error(json: #"{"access_token":"","token_type":"Bearer"}"#)?.code == .invalidTokenResponse)
    }

    @Test func refusesAnAccessTokenThatCouldSplitAHeader() {
        #expect(error(json: #"{"access_token":"abc\r\nX-Evil: 1"}"#)?.code == .invalidTokenResponse)
        #expect(error(json: #"{"access_token":"abcé"}"#)?.code == .invalidTokenResponse)
    }

    // MARK: token_type

    @Test func acceptsBearerInAnyCase() throws {
        for type in ["Bearer", "bearer", "BEARER"] {
            #expect(try parse(json: #"{"access_token":"a","token_type":"\#(type)"}"#).tokenType == type)
        }
    }

    @Test func treatsAnAbsentTokenTypeAsBearer() throws {
        #expect(try parse(json: #"{"access_token":"a"}"#).tokenType == "Bearer")
    }

    @Test func refusesOtherTokenTypes() {
        for type in ["mac", "DPoP", "N_A", ""] {
            #expect(error(json: #"{"access_token":"a","token_type":"\#(type)"}"#)?.code == .unsupportedTokenType, "\(type)")
        }
        #expect(error(json: #"{"access_token":"a","token_type":1}"#)?.code == .invalidTokenResponse)
    }

    /// RFC 9449 §5: a DPoP token in answer to a request that carried a proof,
    /// whatever the case of its type; never to one that did not.
    @Test func acceptsDPoPOnlyForARequestThatCarriedAProof() throws {
        for type in ["DPoP", "dpop", "DPOP"] {
            let response = FlowFixtures.json(#"{"access_token":"a","token_type":"\#(type)","expires_in":60}"#)
            let token = try TokenResponseParser.parse(
                response, requestedAt: FlowFixtures.requestedAt, requestedScopes: [], dpop: true)
            #expect(token.tokenType == type)
            #expect(token.authorizationField.value == "DPoP a")
            #expect(error(json: #"{"access_token":"a","token_type":"\#(type)"}"#)?.code == .unsupportedTokenType)
        }
        // A bearer answer to a DPoP request parses; the caller decides whether it is acceptable.
        let bearer = try TokenResponseParser.parse(
            FlowFixtures.json(#"{"access_token":"a","token_type":"Bearer"}"#), requestedAt: FlowFixtures.requestedAt,
            requestedScopes: [], dpop: true)
        #expect(bearer.authorizationField.value == "Bearer a")
        #expect(
            FlowFixtures.error { () throws(OAuth2Error) in
                _ = try TokenResponseParser.parse(
                    FlowFixtures.json(#"{"access_token":"a","token_type":"mac"}"#), requestedAt: FlowFixtures.requestedAt,
                    requestedScopes: [], dpop: true)
            }?.code == .unsupportedTokenType)
    }

    // MARK: expires_in

    private func expiresAt(_ value: String) throws -> Date? {
        try parse(json: #"{"access_token":"a","expires_in":\#(value)}"#).expiresAt
    }

    @Test func readsExpiresInAsANumber() throws {
        #expect(try expiresAt("3599") == FlowFixtures.requestedAt.addingTimeInterval(3599))
    }

    @Test func readsExpiresInAsANumericString() throws {
        #expect(try expiresAt(#""3599""#) == FlowFixtures.requestedAt.addingTimeInterval(3599))
    }

    @Test func readsExpiresInAsADecimal() throws {
        #expect(try expiresAt("3599.5") == FlowFixtures.requestedAt.addingTimeInterval(3599.5))
        #expect(try expiresAt(#""59.25""#) == FlowFixtures.requestedAt.addingTimeInterval(59.25))
    }

    @Test func acceptsATokenResponseStartingWithAByteOrderMark() throws {
        let token = try parse(json: "\u{FEFF}{\"access_token\":\"a\",\"token_type\":\"Bearer\"}")
        #expect(token.accessToken.value == "a")
    }

    @Test func readsZeroExpiresInAsAlreadyDue() throws {
        #expect(try expiresAt("0") == FlowFixtures.requestedAt)
        #expect(try expiresAt(#""0""#) == FlowFixtures.requestedAt)
    }

    @Test func readsAbsentOrNullExpiresInAsNoExpiry() throws {
        #expect(try parse(json: #"{"access_token":"a"}"#).expiresAt == nil)
        #expect(try expiresAt("null") == nil)
    }

    @Test func clampsAHugeExpiresIn() throws {
        let tenYears = FlowFixtures.requestedAt.addingTimeInterval(TokenResponseParser.maxExpiresIn)
        #expect(try expiresAt("1e300") == tenYears)
        #expect(try expiresAt(#""99999999999999999999999999""#) == tenYears)
        #expect(try expiresAt("9223372036854775808") == tenYears)
    }

    @Test func refusesANegativeExpiresIn() {
        #expect(error(json: #"{"access_token":"a","expires_in":-1}"#)?.code == .invalidTokenResponse)
        #expect(error(json: #"{"access_token":"a","expires_in":"-1"}"#)?.code == .invalidTokenResponse)
    }

    @Test func refusesANonNumericExpiresIn() {
        for value in [#""soon""#, #""NaN""#, #""inf""#, #""""#, #"" 60""#, #""1e3""#, #""60s""#, "true", "[60]"] {
            #expect(error(json: #"{"access_token":"a","expires_in":\#(value)}"#)?.code == .invalidTokenResponse, "\(value)")
        }
    }

    // MARK: refresh_token

    @Test func readsAnEmptyRefreshTokenAsNone() throws {
        #expect(try parse(json: #"{"access_token":"a","refresh_token":""}"#).refreshToken == nil)
        #expect(try parse(json: #"{"access_token":"a","refresh_token":null}"#).refreshToken == nil)
    }

    @Test func refusesANonStringRefreshToken() {
        #expect(error(json: #"{"access_token":"a","refresh_token":5}"#)?.code == .invalidTokenResponse)
    }

    // MARK: scope

    @Test func keepsCommasInsideScopeTokens() throws {
        #expect(try parse(json: #"{"access_token":"a","scope":"repo,gist user:email"}"#).scopes == ["repo,gist", "user:email"])
    }

    @Test func usesTheRequestedScopesWhenScopeIsAbsentOrEmpty() throws {
        #expect(try parse(FlowFixtures.json(#"{"access_token":"a"}"#), scopes: ["x", "y"]).scopes == ["x", "y"])
        #expect(try parse(FlowFixtures.json(#"{"access_token":"a","scope":""}"#), scopes: ["x"]).scopes == ["x"])
    }

    @Test func acceptsAScopeArrayOfStrings() throws {
        #expect(try parse(json: #"{"access_token":"a","scope":["a","b"]}"#).scopes == ["a", "b"])
        #expect(error(json: #"{"access_token":"a","scope":["a",1]}"#)?.code == .invalidTokenResponse)
        #expect(error(json: #"{"access_token":"a","scope":5}"#)?.code == .invalidTokenResponse)
    }

    @Test(arguments: [
        #"{"access_token":"a","scope":"read \u001b[31mred admin"}"#,
        #"{"access_token":"a","scope":"read line\nbreak admin"}"#,
        #"{"access_token":"a","scope":"read quo\"te back\\slash admin"}"#,
        #"{"access_token":"a","scope":"read caf\u00e9 admin"}"#,
        #"{"access_token":"a","scope":["read","\u001b]0;title\u0007","admin"]}"#,
    ])
    func dropsScopeTokensOutsideRFC6749sCharacters(json: String) throws {
        #expect(try parse(json: json).scopes == ["read", "admin"])
    }

    @Test func aScopeOfOnlyForbiddenTokensLeavesNoScopesRatherThanTheRequestedOnes() throws {
        #expect(try parse(FlowFixtures.json(#"{"access_token":"a","scope":"\u001b[2J"}"#), scopes: ["x"]).scopes == [])
    }

    @Test(arguments: [
        "javascript:alert(1)", "file:///etc/passwd", "https://docs.example/\\u001b[31m", "//docs.example/x", "docs.example/x", "https://",
        "https://docs.example/a b",
    ])
    func dropsAnErrorURIThatIsNotAPlainHTTPURI(uri: String) throws {
        let body = #"{"error":"invalid_grant","error_uri":"\#(uri)"}"#
        let error = error(FlowFixtures.json(body, status: 400))
        #expect(error?.code == .invalidGrant)
        #expect(error?.errorURI == nil)
    }

    @Test func keepsAnHTTPErrorURI() throws {
        #expect(
            error(FlowFixtures.json(#"{"error":"invalid_grant","error_uri":"http://docs.example/errors#grant"}"#, status: 400))?.errorURI
                == "http://docs.example/errors#grant")
    }

    // MARK: provider quirks

    @Test func readsAFormEncodedBodyLikeGitHub() throws {
        let response = FlowFixtures.json(
            "access_token=\(Self.token)&scope=repo%2Cgist&token_type=bearer",
            contentType: "application/x-www-form-urlencoded; charset=utf-8")
        let token = try parse(response)
        #expect(token.accessToken.value == Self.token)
        #expect(token.tokenType == "bearer")
        #expect(token.scopes == ["repo,gist"])
    }

    @Test func readsFormEncodedExpiresIn() throws {
        let response = FlowFixtures.json(
            "access_token=a&expires_in=28800&refresh_token=r", contentType: "application/x-www-form-urlencoded")
        let token = try parse(response)
        #expect(token.expiresAt == FlowFixtures.requestedAt.addingTimeInterval(28800))
        #expect(token.refreshToken?.value == "r")
    }

    @Test func readsJSONServedAsTextPlain() throws {
        let response = FlowFixtures.json(#"  {"access_token":"a","token_type":"Bearer"}"#, contentType: "text/plain; charset=UTF-8")
        #expect(try parse(response).accessToken.value == "a")
    }

    @Test func readsAVendorJSONMediaType() throws {
        let response = FlowFixtures.json(#"{"access_token":"a"}"#, contentType: "application/vnd.example+json")
        #expect(try parse(response).accessToken.value == "a")
    }

    @Test func sniffsABodyWithoutContentType() throws {
        #expect(try parse(FlowFixtures.json(#"{"access_token":"a"}"#, contentType: nil)).accessToken.value == "a")
        #expect(try parse(FlowFixtures.json("access_token=b&token_type=bearer", contentType: nil)).accessToken.value == "b")
    }

    @Test func refusesAFormBodyRepeatingAField() {
        let response = FlowFixtures.json("access_token=a&access_token=b", contentType: "application/x-www-form-urlencoded")
        #expect(error(response)?.code == .invalidTokenResponse)
    }

    /// A form body that only the end of the connection ended may have been
    /// cut short and still parse (a truncated refresh token would replace
    /// the account's good one): refused, sniffed or declared.
    @Test(arguments: ["application/x-www-form-urlencoded", nil])
    func refusesAFormBodyThatOnlyTheConnectionsEndEnded(contentType: String?) {
        var response = FlowFixtures.json("access_token=\(Self.token)&refresh_token=\(Self.refresh)", contentType: contentType)
        response.bodyEndedWithConnection = true
        let error = error(response)
        #expect(error?.code == .invalidTokenResponse)
        #expect(error?.message.contains("may have cut it short") == true, "\(String(describing: error))")
    }

    /// A JSON object shows its own end, however the body ended.
    @Test func readsJSONThatOnlyTheConnectionsEndEnded() throws {
        var response = FlowFixtures.json(#"{"access_token":"a","refresh_token":"r"}"#)
        response.bodyEndedWithConnection = true
        #expect(try parse(response).refreshToken?.value == "r")
    }

    // MARK: errors

    @Test func errorInA200IsTheProvidersError() {
        let response = FlowFixtures.json(
            "error=bad_verification_code&error_description=The+code+passed+is+incorrect+or+expired.&error_uri=https%3A%2F%2Fdocs.github.com",
            contentType: "application/x-www-form-urlencoded"
        )
        let error = error(response)
        #expect(error?.code == "bad_verification_code")
        #expect(error?.errorDescription == "The code passed is incorrect or expired.")
        #expect(error?.errorURI == "https://docs.github.com")
        #expect(error?.httpStatus == 200)
    }

    @Test func jsonErrorInA200IsTheProvidersError() {
        #expect(error(json: #"{"error":"invalid_grant","access_token":"a"}"#)?.code == .invalidGrant)
    }

    @Test func errorJSONIn400IsTheProvidersError() {
        let error = error(FlowFixtures.json(#"{"error":"invalid_grant","error_description":"Code expired\r\n"}"#, status: 400))
        #expect(error?.code == .invalidGrant)
        #expect(error?.errorDescription == "Code expired")
        #expect(error?.httpStatus == 400)
    }

    @Test func invalidClientIn401IsTheProvidersError() {
        let response = FlowFixtures.json(
            #"{"error":"invalid_client"}"#, status: 401, headers: [("WWW-Authenticate", #"Basic realm="token""#)])
        let error = error(response)
        #expect(error?.code == .invalidClient)
        #expect(error?.httpStatus == 401)
    }

    @Test func anHTMLErrorPageIsAnHTTPError() {
        let error = error(
            FlowFixtures.json("<html><body>Internal Server Error \(Self.token)</body></html>", status: 500, contentType: "text/html"))
        #expect(error?.code == .httpError)
        #expect(error?.httpStatus == 500)
        #expect(error?.message.contains("html") == false)
    }

    @Test func anEmpty400IsAnHTTPError() {
        let error = error(HTTPTransportResponse(status: 400))
        #expect(error?.code == .httpError)
        #expect(error?.httpStatus == 400)
    }

    @Test func anErrorObjectWithANonStringErrorIsAnHTTPError() {
        #expect(error(FlowFixtures.json(#"{"error":{"code":7}}"#, status: 400))?.code == .httpError)
        #expect(error(FlowFixtures.json(#"{"error":""}"#, status: 400))?.code == .httpError)
    }

    @Test func a429IsRateLimitedWithRetryAfterSeconds() {
        let error = error(FlowFixtures.json(#"{"error":"slow_down"}"#, status: 429, headers: [("Retry-After", "120")]))
        #expect(error?.code == .rateLimited)
        #expect(error?.retryAfter == .seconds(120))
        #expect(error?.httpStatus == 429)
    }

    @Test func a429ReadsRetryAfterAsAnHTTPDate() {
        // requestedAt is 2023-11-14T22:13:20Z.
        let response = HTTPTransportResponse(status: 429, headers: [.retryAfter: "Tue, 14 Nov 2023 22:14:20 GMT"])
        #expect(error(response)?.retryAfter == .seconds(60))
    }

    @Test func a429WithoutUsableRetryAfterHasNone() {
        #expect(error(HTTPTransportResponse(status: 429))?.retryAfter == nil)
        #expect(error(HTTPTransportResponse(status: 429, headers: [.retryAfter: "soon"]))?.retryAfter == nil)
        #expect(
            error(HTTPTransportResponse(status: 429, headers: [.retryAfter: "99999999999999"]))?.retryAfter
                == ProviderResponse.maxRetryAfter)
    }

    @Test func aRedirectIsRefused() {
        let error = error(HTTPTransportResponse(status: 302, headers: [.location: "https://evil.example.com/"]))
        #expect(error?.code == .unexpectedRedirect)
        #expect(error?.httpStatus == 302)
    }

    @Test func aBodyOverTheLimitIsTooLarge() {
        let response = FlowFixtures.json(#"{"access_token":"\#(String(repeating: "a", count: 200))"}"#)
        let error = FlowFixtures.error { () throws(OAuth2Error) in try parse(response, maxBodySize: 100) }
        #expect(error?.code == .responseTooLarge)
    }

    @Test func truncatedJSONIsAnInvalidResponse() {
        #expect(error(json: #"{"access_token":"\#(Self.token)","token_type":"Bea"#)?.code == .invalidTokenResponse)
    }

    @Test func deeplyNestedJSONIsAnInvalidResponse() {
        let nested = String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000)
        #expect(error(json: #"{"access_token":"a","x":\#(nested)}"#)?.code == .invalidTokenResponse)
    }

    @Test func duplicateKeysAreAnInvalidResponse() {
        #expect(error(json: #"{"access_token":"a","access_token":"\#(Self.token)"}"#)?.code == .invalidTokenResponse)
    }

    @Test func invalidUTF8IsAnInvalidResponse() {
        var body = Data(#"{"access_token":"a","x":""#.utf8)
        body.append(contentsOf: [0xFF, 0x22, 0x7D])
        #expect(
            error(HTTPTransportResponse(status: 200, headers: [.contentType: "application/json"], body: body))?.code
                == .invalidTokenResponse)
        let form = Data([0x61, 0x3D, 0xFF])
        #expect(
            error(HTTPTransportResponse(status: 200, headers: [.contentType: "application/x-www-form-urlencoded"], body: form))?.code
                == .invalidTokenResponse)
    }

    @Test func anHTMLPageIn200IsAnInvalidResponse() {
        #expect(
            error(FlowFixtures.json("<!doctype html><html>Login</html>", contentType: "text/html; charset=utf-8"))?.code
                == .invalidTokenResponse)
        #expect(error(FlowFixtures.json("<!doctype html><html>Login</html>", contentType: nil))?.code == .invalidTokenResponse)
    }

    @Test func aNonObjectIsAnInvalidResponse() {
        for body in [#"["access_token"]"#, #""\#(Self.token)""#, "42", "null", "true"] {
            #expect(error(json: body)?.code == .invalidTokenResponse, "\(body)")
        }
    }

    @Test func providerErrorIsFoundInAnyStatus() {
        #expect(
            TokenResponseParser.providerError(from: FlowFixtures.json(#"{"error":"unsupported_token_type"}"#, status: 400))?.code
                == "unsupported_token_type")
        #expect(
            TokenResponseParser.providerError(from: FlowFixtures.json(#"{"error":"authorization_pending"}"#, status: 400))?.code
                == .authorizationPending)
        #expect(TokenResponseParser.providerError(from: HTTPTransportResponse(status: 503)) == nil)
        #expect(TokenResponseParser.providerError(from: FlowFixtures.json("<html>", status: 400, contentType: "text/html")) == nil)
    }
}
