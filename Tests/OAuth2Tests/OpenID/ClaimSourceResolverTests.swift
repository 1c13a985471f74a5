import Foundation
import OAuth2Testing
import Testing
@testable import OAuth2

/// Aggregated and distributed claims (OpenID Connect Core 1.0 §5.6.2),
/// resolved by `userInfo(resolvingClaimSources: true)`: a source's claims
/// reach the app only from a JWT that verifies with keys the app trusts for
/// it, a distributed one is fetched with its own token in the header only,
/// and any failure costs that source's claims, never the whole answer.
@Suite struct ClaimSourceResolverTests {
    static let issuer = "https://id.example.com"
    static let userinfo = URL(string: "https://id.example.com/userinfo")!
    static let claimsEndpoint = URL(string: "https://claims.example.net/claims")!
    static let bankJWKS = URL(string: "https://bank.example/jwks")!
    static let bank = ClaimsProvider(
        issuer: "https://bank.example", jwksURI: bankJWKS, endpointOrigins: [URL(string: "https://bank.example")!])
    static let sourceToken = "source-token-0123456789"

    let key: JWTSigningKey
    let bankKey: JWTSigningKey
    let harness: ClientHarness
    let client: OAuth2Client

    init() async throws {
        key = try JWTSigningKey.rsa(pem: JOSEFixtures.rsaKey.pemRepresentation, keyID: "op-key")
        bankKey = try JWTSigningKey.rsa(pem: JOSEFixtures.otherRSAKey.pemRepresentation, keyID: "bank-key")
        var configuration = try OpenIDRequestTests.configuration(userinfo: Self.userinfo)
        configuration.openID?.claimsProviders = [Self.bank]
        harness = try ClientHarness(configuration: configuration)
        for (url, key) in [(OpenIDRequestTests.jwks, key), (Self.bankJWKS, bankKey)] {
            let jwks = try JSONEncoder().encode(JSONValue.object(["keys": .array([.object(try #require(key.publicJWK))])]))
            harness.transport.enqueue(HTTPTransportResponse(status: 200, headers: [.contentType: "application/json"], body: jwks), for: url)
        }
        client = harness.provider.client(account: "alice")
        var token = Fixture.token(expiresAt: harness.clock.now().addingTimeInterval(3600))
        token.idToken = try IDToken(claims: IDTokenClaimsTests.claims(["iss": .string(Self.issuer), "aud": .string("client-id")]))
        _ = try await client.adopt(token)
    }

    /// The userinfo answer: `user-1` with `_claim_names` and `_claim_sources`, and `extra` claims of its own.
    func answer(names: [String: String], sources: [String: JSONValue], extra: [String: JSONValue] = [:]) throws {
        var claims: [String: JSONValue] = ["sub": .string("user-1")]
        claims["_claim_names"] = .object(names.mapValues(JSONValue.string))
        claims["_claim_sources"] = .object(sources)
        claims.merge(extra) { $1 }
        let body = try JSONEncoder().encode(JSONValue.object(claims))
        harness.transport.enqueue(
            HTTPTransportResponse(status: 200, headers: [.contentType: "application/json"], body: body), for: Self.userinfo)
    }

    func jwt(_ claims: [String: JSONValue], key: JWTSigningKey? = nil) throws -> String {
        try JWT.sign(claims: claims, key: key ?? self.key).value
    }

    func aggregated(_ jwt: String) -> JSONValue { .object(["JWT": .string(jwt)]) }

    func distributed(_ url: URL, token: String? = Self.sourceToken) -> JSONValue {
        var source: [String: JSONValue] = ["endpoint": .string(url.absoluteString)]
        if let token { source["access_token"] = .string(token) }
        return .object(source)
    }

    func claimsEndpointAnswers(_ jwt: String, at url: URL = Self.claimsEndpoint, status: Int = 200) {
        harness.transport.enqueue(
            HTTPTransportResponse(status: .init(code: status), headers: [.contentType: "application/jwt"], body: Data(jwt.utf8)), for: url)
    }

    func resolved() async throws -> UserInfo { try await client.userInfo(resolvingClaimSources: true) }

    func codes(_ info: UserInfo) -> [String: OAuth2Error.Code] {
        Dictionary(info.unresolvedClaimSources.map { ($0.source, $0.code) }, uniquingKeysWith: { first, _ in first })
    }

    @Test func anAggregatedClaimSignedWithTheProvidersKeysIsResolved() async throws {
        let address: JSONValue = .object(["country": .string("US")])
        try answer(
            names: ["address": "src1", "name": "src1"],
            sources: ["src1": aggregated(try jwt(["address": address, "name": .string("Alice")]))])
        let info = try await resolved()
        #expect(info.claims["address"] == address)
        #expect(info.name == "Alice", "resolved claims are read like any other")
        #expect(info.claimSources["address"] == ClaimSource(name: "src1", issuer: Self.issuer, endpoint: nil))
        #expect(info.claimSources["sub"] == nil)
        #expect(info.unresolvedClaimSources.isEmpty)
        #expect(info.claims["_claim_sources"] != nil, "the answer's own members stay as sent")

        try answer(names: ["name": "src1"], sources: ["src1": aggregated(try jwt(["name": .string("Alice")]))])
        let plain = try await client.userInfo()
        #expect(plain.claims["name"] == nil && plain.claimSources.isEmpty, "userInfo() resolves nothing")
    }

    @Test func aDistributedClaimIsFetchedWithTheSourcesOwnTokenInTheHeaderOnly() async throws {
        try answer(names: ["credit_score": "src1"], sources: ["src1": distributed(Self.claimsEndpoint)])
        claimsEndpointAnswers(try jwt(["credit_score": .number(650)]))
        let info = try await resolved()
        #expect(info.claims["credit_score"] == .number(650))
        #expect(info.claimSources["credit_score"] == ClaimSource(name: "src1", issuer: Self.issuer, endpoint: Self.claimsEndpoint))
        let requests = harness.transport.requests(for: Self.claimsEndpoint)
        let request = try #require(requests.first)
        #expect(requests.count == 1)
        #expect(request.method == .get && request.body == nil)
        #expect(request.url == Self.claimsEndpoint, "no token in the query")
        #expect(request.headers[.authorization] == "Bearer \(Self.sourceToken)", "the source's token, never the account's")
        #expect(request.headers[.accept] == "application/jwt")
        #expect(request.redirects == .never)
        #expect(request.maxResponseSize == 64 * 1024)

        try answer(names: ["credit_score": "src1"], sources: ["src1": distributed(Self.claimsEndpoint, token: nil)])
        claimsEndpointAnswers(try jwt(["credit_score": .number(650)]))
        #expect(try await resolved().claims["credit_score"] == .number(650))
        #expect(harness.transport.requests(for: Self.claimsEndpoint).last?.headers[.authorization] == nil, "no token: none sent")
    }

    @Test func aSourceThatIsNotTrustedOrDoesNotVerifyIsReportedAndItsClaimsLeftOut() async throws {
        let unsigned = JOSEFixtures.token(header: #"{"alg":"none"}"#, payload: #"{"a":"x"}"#, signature: [])
        let forged = try jwt(
            ["b": .string("x")], key: try JWTSigningKey.rsa(pem: JOSEFixtures.otherRSAKey.pemRepresentation, keyID: "op-key"))
        try answer(
            names: ["a": "none", "b": "forged", "c": "elsewhere", "d": "good", "e": "hmac"],
            sources: [
                "none": aggregated(unsigned),
                "forged": aggregated(forged),
                "elsewhere": aggregated(try jwt(["c": .string("x"), "iss": .string("https://evil.example")])),
                "good": aggregated(try jwt(["d": .string("kept"), "iss": .string(Self.issuer)])),
                "hmac": aggregated(try jwt(["e": .string("x")], key: JWTSigningKey.hmac(Secret("client-secret-value-0123456789abcdef")))),
            ],
            extra: ["email": .string("alice@example.com")]
        )
        let info = try await resolved()
        #expect(
            codes(info) == [
                "none": .unsupportedAlgorithm, "forged": .invalidSignature, "elsewhere": .untrustedClaimSource,
                "hmac": .unsupportedAlgorithm,
            ])
        #expect(info.unresolvedClaimSources.map(\.source) == ["elsewhere", "forged", "hmac", "none"], "in source name order")
        #expect(["a", "b", "c", "e"].allSatisfy { info.claims[$0] == nil && info.claimSources[$0] == nil })
        #expect(info.claims["d"] == .string("kept"))
        #expect(info.email == "alice@example.com", "the answer itself is kept")
        #expect(info.unresolvedClaimSources.first { $0.source == "forged" }?.claims == ["b"])
    }

    @Test func aClaimsProviderTheAppNamedIsTrustedForItsIssuerAndItsOriginOnly() async throws {
        let bankEndpoint = URL(string: "https://bank.example/claims")!
        try answer(
            names: ["score": "bank", "limit": "bankEndpoint", "other": "bankAsOP", "fake": "opAsBank"],
            sources: [
                "bank": aggregated(try jwt(["score": .number(1), "iss": .string(Self.bank.issuer)], key: bankKey)),
                "bankEndpoint": distributed(bankEndpoint),
                "bankAsOP": distributed(bankEndpoint),
                "opAsBank": aggregated(try jwt(["fake": .number(3), "iss": .string(Self.bank.issuer)])),
            ])
        // Sources are resolved in name order: bankAsOP, then bankEndpoint.
        claimsEndpointAnswers(try jwt(["other": .number(2), "iss": .string(Self.issuer)], key: bankKey), at: bankEndpoint)
        claimsEndpointAnswers(try jwt(["limit": .number(5)], key: bankKey), at: bankEndpoint)
        let info = try await resolved()
        #expect(info.claimSources["score"] == ClaimSource(name: "bank", issuer: Self.bank.issuer, endpoint: nil))
        #expect(info.claimSources["limit"] == ClaimSource(name: "bankEndpoint", issuer: Self.bank.issuer, endpoint: bankEndpoint))
        #expect(codes(info) == ["bankAsOP": .issuerMismatch, "opAsBank": .unknownSigningKey])
        #expect(info.claims["other"] == nil && info.claims["fake"] == nil)
    }

    @Test func anEndpointIsFetchedOnlyUnderTheRules() async throws {
        try answer(
            names: ["a": "http", "b": "internal", "c": "redirect", "d": "down", "e": "badToken", "f": "big"],
            sources: [
                "http": distributed(URL(string: "http://claims.example.net/claims")!),
                "internal": distributed(URL(string: "https://10.0.0.7/claims")!),
                "redirect": distributed(URL(string: "https://claims.example.net/moved")!),
                "down": distributed(URL(string: "https://claims.example.net/down")!),
                "badToken": distributed(Self.claimsEndpoint, token: "a\r\nX-Evil: 1"),
                "big": distributed(URL(string: "https://claims.example.net/big")!),
            ])
        harness.transport.enqueue(
            HTTPTransportResponse(status: 302, headers: [.location: "https://claims.example.net/claims"]),
            for: URL(string: "https://claims.example.net/moved")!)
        harness.transport.enqueue(json: #"{"error":"server_error"}"#, status: 500, for: URL(string: "https://claims.example.net/down")!)
        claimsEndpointAnswers(String(repeating: "a", count: 64 * 1024 + 1), at: URL(string: "https://claims.example.net/big")!)
        let info = try await resolved()
        #expect(
            codes(info) == [
                "http": .insecureEndpoint, "internal": .insecureEndpoint, "redirect": .unexpectedRedirect, "down": "server_error",
                "badToken": .invalidClaimSource, "big": .responseTooLarge,
            ])
        #expect(
            !harness.transport.requests.contains { $0.url.host == "10.0.0.7" },
            "an internal address named by a public provider is not fetched")
        #expect(harness.transport.requests(for: Self.claimsEndpoint).isEmpty, "a token that would break the header is not sent")
        #expect(harness.transport.requests(for: URL(string: "http://claims.example.net/claims")!).isEmpty)
        #expect(info.unresolvedClaimSources.allSatisfy { !$0.message.contains(Self.sourceToken) && !$0.message.contains("X-Evil") })
    }

    @Test func aLoopbackUserinfoEndpointMayNameALoopbackClaimsEndpoint() async throws {
        let configuration = try OpenIDRequestTests.configuration(userinfo: URL(string: "http://127.0.0.1:8080/userinfo")!)
        let local = try ClientHarness(configuration: configuration)
        let jwks = try JSONEncoder().encode(JSONValue.object(["keys": .array([.object(try #require(key.publicJWK))])]))
        local.transport.enqueue(
            HTTPTransportResponse(status: 200, headers: [.contentType: "application/json"], body: jwks), for: OpenIDRequestTests.jwks)
        let client = local.provider.client(account: "alice")
        var token = Fixture.token(expiresAt: local.clock.now().addingTimeInterval(3600))
        token.idToken = try IDToken(claims: IDTokenClaimsTests.claims(["iss": .string(Self.issuer), "aud": .string("client-id")]))
        _ = try await client.adopt(token)
        let endpoint = URL(string: "http://127.0.0.1:8080/claims")!
        let body = try JSONEncoder().encode(
            JSONValue.object([
                "sub": .string("user-1"), "_claim_names": .object(["x": .string("s")]),
                "_claim_sources": .object(["s": distributed(endpoint)]),
            ]))
        local.transport.enqueue(HTTPTransportResponse(status: 200, headers: [.contentType: "application/json"], body: body))
        local.transport.enqueue(
            HTTPTransportResponse(status: 200, headers: [.contentType: "application/jwt"], body: Data(try jwt(["x": .number(1)]).utf8)),
            for: endpoint)
        let info = try await client.userInfo(resolvingClaimSources: true)
        #expect(info.claims["x"] == .number(1))
        #expect(info.unresolvedClaimSources.isEmpty)
    }

    @Test func aSourceMayNotSetTheSubjectAndMustHaveTheClaimsNamedForIt() async throws {
        try answer(
            names: ["sub": "s1", "name": "s1", "email": "s1", "x": "missing", "y": "expired"],
            sources: [
                "s1": aggregated(try jwt(["sub": .string("user-1"), "name": .string("Alice")])),
                "expired": aggregated(try jwt(["y": .number(1), "exp": .number(harness.clock.now().timeIntervalSince1970 - 3600)])),
            ])
        let info = try await resolved()
        #expect(info.subject == "user-1" && info.claims["sub"] == .string("user-1"))
        #expect(info.name == "Alice")
        let failures = info.unresolvedClaimSources.map { "\($0.source):\($0.claims.joined(separator: ",")):\($0.code)" }.sorted()
        #expect(
            failures == [
                "expired:y:invalid_claim_source", "missing:x:invalid_claim_source", "s1:email:invalid_claim_source",
                "s1:sub:invalid_claim_source",
            ])
        #expect(info.claims["y"] == nil && info.claims["email"] == nil)
    }

    @Test func aSourceWhoseJWTIsNotValidYetIsReportedAndItsClaimsLeftOut() async throws {
        let now = harness.clock.now().timeIntervalSince1970
        try answer(
            names: ["a": "early", "b": "issuedLater", "c": "textual", "d": "skewed"],
            sources: [
                "early": aggregated(try jwt(["a": .number(1), "nbf": .number(now + 3600)])),
                "issuedLater": aggregated(try jwt(["b": .number(1), "iat": .number(now + 3600)])),
                "textual": aggregated(try jwt(["c": .number(1), "nbf": .string("soon")])),
                // Within the 60-second leeway: the provider's clock runs a little ahead.
                "skewed": aggregated(try jwt(["d": .number(1), "iat": .number(now + 30), "nbf": .number(now + 30)])),
            ])
        let info = try await resolved()
        #expect(codes(info) == ["early": .invalidClaimSource, "issuedLater": .invalidClaimSource, "textual": .invalidClaimSource])
        #expect(info.claims["a"] == nil && info.claims["b"] == nil && info.claims["c"] == nil)
        #expect(info.claims["d"] == .number(1))
    }

    @Test func theProvidersJWTAboutAnotherUserIsNotThisUsers() async throws {
        try answer(
            names: ["name": "mallory", "score": "bank"],
            sources: [
                "mallory": aggregated(try jwt(["sub": .string("mallory"), "name": .string("Mallory")])),
                "bank": aggregated(
                    try jwt(["sub": .string("bank-customer-7"), "score": .number(1), "iss": .string(Self.bank.issuer)], key: bankKey)),
            ])
        let info = try await resolved()
        #expect(info.name == nil)
        #expect(codes(info) == ["mallory": .subjectMismatch])
        #expect(info.claims["score"] == .number(1), "a claims provider's sub is its own")
    }
}
