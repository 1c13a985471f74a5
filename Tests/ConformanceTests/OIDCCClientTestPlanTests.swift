import Foundation
import OAuth2
import Testing

/// The modules of the suite's full OIDCCClientTestPlan that are in neither
/// certification profile above, for `response_type=code`. The modules that
/// do not apply to this library, and why, are listed in README.md.
@Suite(.enabled(if: ConformanceProvider.isConfigured, ConformanceProvider.requirement))
struct OIDCCClientTestPlanTests {
    @Test("oidcc-client-test-missing-aud") func anIDTokenWithoutAudIsRefused() async throws {
        try await expectIDTokenRefused("oidcc-client-test-missing-aud", .invalidIDToken)
    }

    /// The provider lists ES256 only and signs with a P-256 key of its set.
    @Test("oidcc-client-test-invalid-sig-es256") func anES256IDTokenWithABadSignatureIsRefused() async throws {
        try await expectIDTokenRefused("oidcc-client-test-invalid-sig-es256", .invalidSignature)
    }

    /// An HS256 ID token keyed with the client secret: the library verifies
    /// ID tokens with the provider's public keys only, and refuses the
    /// algorithm before the signature.
    @Test("oidcc-client-test-invalid-sig-hs256") func anHS256IDTokenIsRefused() async throws {
        try await expectIDTokenRefused("oidcc-client-test-invalid-sig-hs256", .unsupportedAlgorithm)
    }

    /// "Pass the access token using the 'Bearer' authentication scheme":
    /// the provider takes it from the header only, and refuses it in a
    /// parameter as well.
    @Test("oidcc-client-test-userinfo-bearer-header") func userinfoGetsTheTokenInTheHeader() async throws {
        let run = try ConformanceProvider.run("oidcc-client-test-userinfo-bearer-header")
        let client = try await run.signedInClient(try await run.provider())
        #expect(try await client.userInfo().subject == "user-subject-1234531")
        let userinfo = try #require(try await run.log().first { $0.event == "userinfo" })
        #expect(userinfo["token_in"] as? [String] == ["header"])
    }

    /// "pass the access token as form-encoded body parameter": does not apply
    /// by design. The library sends a bearer token in the `Authorization`
    /// header only (RFC 6750 §2.1, which a resource server must support;
    /// §2.2's body is optional), so this provider, which takes it from the
    /// body alone, refuses the request; the token never appears in a body or
    /// query. The Basic profile accepts either method.
    @Test("oidcc-client-test-userinfo-bearer-body") func theTokenIsNeverSentInTheBody() async throws {
        let run = try ConformanceProvider.run("oidcc-client-test-userinfo-bearer-body")
        let client = try await run.signedInClient(try await run.provider())
        await #expect(throws: OAuth2Error.self) { try await client.userInfo() }
        let userinfo = try await run.log().filter { $0.event == "userinfo" }
        #expect(!userinfo.isEmpty)
        #expect(userinfo.allSatisfy { $0["token_in"] as? [String] == ["header"] && $0["method"] as? String == "GET" })
    }

    /// "a userinfo request using … userinfo_signed_response_alg RS256": the
    /// answer is a JWT (`application/jwt`, OpenID Connect Core §5.3.2) signed
    /// with a key of the provider's set, with `iss` and `aud`; the library
    /// verifies it as it verifies an ID token's signature, and reads its claims.
    @Test("oidcc-client-test-userinfo-signed") func aSignedUserinfoAnswerIsVerifiedAndRead() async throws {
        let run = try ConformanceProvider.run("oidcc-client-test-userinfo-signed")
        let client = try await run.signedInClient(try await run.provider(), scopes: ["openid", "email"])
        let info = try await client.userInfo()
        #expect(info.subject == "user-subject-1234531")
        #expect(info.email == "user@example.com")
        #expect(info.claims["iss"]?.stringValue == run.issuer)
    }

    /// "make an authentication request and a token request using the correct
    /// mtls enabled token endpoint obtained from mtls_endpoint_aliases. A
    /// userinfo request is also required": discovered with a client
    /// certificate and no secret, the configuration takes the alias (RFC 8705
    /// §5) and `tls_client_auth`, and op.py's TLS port, which asks for the
    /// certificate, sees the client it names. (Userinfo is on the TLS port too:
    /// the token is bound to the certificate, and a bound token never goes
    /// over http; the suite's endpoints are all https.)
    @Test("oidcc-client-test-mtls-endpoint-aliases") func theTokenRequestGoesToTheMutualTLSAlias() async throws {
        let run = try ConformanceProvider.run("oidcc-client-test-mtls-endpoint-aliases")
        let certificate = try ClientCertificate(certificateFile: run.tls.clientCertificateFile, keyFile: run.tls.clientKeyFile)
        // Connecting (the TLS handshake included) may take as long as a whole
        // request: the default 10 s ran out twice on a loaded machine, at the
        // start of a full run, where every suite begins at once.
        let transport = CurlTransport(
            configuration: CurlTransport.Configuration(timeout: .seconds(30), connectTimeout: .seconds(30), caFile: run.tls.caFile))
        let configuration = try await OAuth2Configuration.discover(
            issuer: run.issuer, clientID: ModuleRun.clientID, transport: transport, clientCertificate: certificate)
        #expect(configuration.tokenEndpoint.scheme == "https" && configuration.tokenEndpoint.path.hasSuffix("/token"))
        let provider = try OAuth2Provider(configuration: configuration, transport: transport)
        let client = try await run.signedInClient(provider)
        #expect(try await client.userInfo().subject == "user-subject-1234531")
        await transport.shutdown()
        let token = try #require(try await run.log().first { $0.event == "token" })
        #expect(token["client_authentication"] as? String == "tls_client_auth")
        #expect(try await run.calls() == ["discovery", "authorization", "token", "jwks", "userinfo"])
    }

    /// "process a userinfo response … with aggregated claims": the library
    /// resolves the source and refuses it, since its JWT is signed with
    /// `none` (the module signs it so, as the old Python suite did): no
    /// `address` or `phone_number` reaches the app as a claim of the user, the
    /// source is reported unresolved with `unsupported_algorithm`, and the
    /// userinfo answer itself is read.
    @Test("oidcc-client-test-aggregated-claims") func anAggregatedSourceSignedWithNoneIsReportedNotTrusted() async throws {
        let run = try ConformanceProvider.run("oidcc-client-test-aggregated-claims")
        let client = try await run.signedInClient(try await run.provider(), scopes: ["openid", "address", "phone"])
        let info = try await client.userInfo(resolvingClaimSources: true)
        #expect(info.subject == "user-subject-1234531")
        #expect(info.claims["address"] == nil && info.claims["phone_number"] == nil && info.claimSources.isEmpty)
        #expect(info.unresolvedClaimSources.map(\.source) == ["src1"])
        #expect(info.unresolvedClaimSources.first?.claims == ["address", "phone_number"])
        #expect(info.unresolvedClaimSources.first?.code == .unsupportedAlgorithm)
    }

    /// "process a userinfo response with distributed claims and send a
    /// request to the claims_endpoint to retrieve the claims": the library
    /// fetches src1's endpoint once, with src1's own access token in the
    /// `Authorization` header only (op.py checks it as the suite does, and
    /// refuses it in the query or in two places), verifies the answer with
    /// the provider's key set, and `credit_score` 650 reaches the app.
    @Test("oidcc-client-test-distributed-claims") func distributedClaimsAreFetchedWithTheSourcesTokenAndVerified() async throws {
        let run = try ConformanceProvider.run("oidcc-client-test-distributed-claims")
        let client = try await run.signedInClient(try await run.provider())
        let info = try await client.userInfo(resolvingClaimSources: true)
        #expect(info.claims["credit_score"] == .number(650))
        #expect(info.claimSources["credit_score"]?.name == "src1")
        #expect(info.claimSources["credit_score"]?.issuer == run.issuer)
        #expect(info.claimSources["credit_score"]?.endpoint?.absoluteString == run.issuer + "/claims_endpoint")
        #expect(info.unresolvedClaimSources.isEmpty)
        let claimsRequests = try await run.log().filter { $0.event == "claims_endpoint" }
        #expect(claimsRequests.count == 1)
        #expect(claimsRequests.first?["method"] as? String == "GET")
        #expect(claimsRequests.first?["token_in"] as? [String] == ["header"])
        #expect(claimsRequests.first?["token_valid"] as? Bool == true)
        #expect(try await run.calls() == ["discovery", "authorization", "token", "jwks", "userinfo", "claims_endpoint"])
    }

    /// "send an Authentication Request with response mode set to form_post,
    /// max_age=0 and prompt=none … consume the HTML form post authorization
    /// error response, and show an error": the provider refuses a request
    /// without those three and answers with a form posting
    /// `error=login_required` and the state to the redirect URI. The app
    /// hands the posted fields to ``FormPostResponse``; the grant fails with
    /// the provider's error, and no token request is made.
    @Test("oidcc-client-test-form-post-error") func aPostedErrorResponseEndsTheSignIn() async throws {
        let run = try ConformanceProvider.run("oidcc-client-test-form-post-error")
        var configuration = try await run.discover()
        configuration.responseMode = .formPost
        let provider = try await run.provider(configuration)
        let pending = try await provider.authorizationURL(
            redirectURI: ModuleRun.redirectURI, scopes: ["openid"], additionalParameters: [("max_age", "0"), ("prompt", "none")])
        let page = try await ModuleRun.transport.send(HTTPTransportRequest(url: pending.url, redirects: .never))
        #expect(page.status.code == 200)
        let form = try #require(PostedForm(html: String(decoding: page.body, as: UTF8.self)))
        #expect(form.action == ModuleRun.redirectURI.absoluteString)
        #expect(form.fields.map { $0.0 } == ["error", "state"])
        let response = try FormPostResponse(body: form.body)
        let error = await #expect(throws: OAuth2Error.self) {
            try await provider.token(for: .authorizationCode(formPost: response, pending: pending))
        }
        #expect(error?.code == OAuth2Error.Code(rawValue: "login_required"))
        #expect(try await run.calls() == ["discovery", "authorization"], "no token request after the error")
        let authorization = try #require(try await run.log().first { $0.event == "authorization" })
        #expect(authorization["response_mode"] as? String == "form_post")
        #expect(authorization["max_age"] as? String == "0")
        #expect(authorization["prompt"] as? String == "none")
    }
}

/// The form of a form_post response page (OAuth 2.0 Form Post Response Mode
/// §2): where it posts and its hidden fields, read as the browser would
/// submit them. Only the markup op.py writes is understood.
struct PostedForm {
    let action: String
    let fields: [(String, String)]

    init?(html: String) {
        guard let action = Self.attribute("action", in: html) else { return nil }
        self.action = action
        var fields: [(String, String)] = []
        var rest = html[...]
        while let start = rest.range(of: "<input ") {
            let tag = rest[start.lowerBound...].prefix { $0 != ">" }
            if let name = Self.attribute("name", in: String(tag)), let value = Self.attribute("value", in: String(tag)) {
                fields.append((name, value))
            }
            rest = rest[start.upperBound...]
        }
        self.fields = fields
    }

    /// The `application/x-www-form-urlencoded` body the browser would post.
    var body: String {
        let allowed = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
        func encode(_ text: String) -> String { text.addingPercentEncoding(withAllowedCharacters: allowed) ?? "" }
        return fields.map { encode($0.0) + "=" + encode($0.1) }.joined(separator: "&")
    }

    private static func attribute(_ name: String, in text: String) -> String? {
        guard let start = text.range(of: " \(name)=\"") else { return nil }
        guard let end = text[start.upperBound...].firstIndex(of: "\"") else { return nil }
        return unescape(String(text[start.upperBound..<end]))
    }

    /// Python's html.escape, undone; `&amp;` last, so that no entity is decoded twice.
    private static func unescape(_ text: String) -> String {
        text.replacingOccurrences(of: "&quot;", with: "\"").replacingOccurrences(of: "&#x27;", with: "'")
            .replacingOccurrences(of: "&lt;", with: "<").replacingOccurrences(of: "&gt;", with: ">")
            .replacingOccurrences(of: "&amp;", with: "&")
    }
}
