import Crypto
import Foundation
import OAuth2Testing
import Testing
@testable import OAuth2

/// ``SigningTransport`` with DPoP-bound tokens (RFC 9449): a proof per
/// request and per hop, nonces per origin, the DPoP challenge, and never a
/// bearer header for a bound token.
@Suite struct SigningTransportDPoPTests {
    /// The tokens it hands out are DPoP-bound (`bound(_:key:)`).
    typealias BoundTokenSource = SigningTransportTests.FixedTokenSource

    /// A proof's header and claims, its signature checked against its own `jwk`.
    struct Proof {
        let header: [String: JSONValue]
        let claims: [String: JSONValue]

        init(_ text: String?) throws {
            let jws = try CompactJWS(try #require(text))
            guard case .object(let jwk)? = jws.header["jwk"] else { throw OAuth2Error(code: .invalidJWT, message: "no jwk") }
            _ = try jws.verify(with: JSONWebKeySet(keys: [try JSONWebKey(jwk)]), allowedAlgorithms: [.es256, .edDSA])
            header = jws.header
            claims = try jws.payloadObject()
        }

        var htm: String? { claims["htm"]?.stringValue }
        var htu: String? { claims["htu"]?.stringValue }
        var ath: String? { claims["ath"]?.stringValue }
        var nonce: String? { claims["nonce"]?.stringValue }
        var jti: String? { claims["jti"]?.stringValue }
    }

    static let dpopField = HTTPField.Name("DPoP")!
    static let nonceField = HTTPField.Name("DPoP-Nonce")!

    private let api = URL(string: "https://api.example/v1/me?x=1#f")!
    private let key: DPoPKey
    private let source: BoundTokenSource

    init() throws {
        key = try DPoPKey.generate()
        source = Self.source(key: key)
    }

    static func bound(_ value: String, key: DPoPKey?, type: String = "DPoP") -> AccessToken {
        var token = AccessToken(accessToken: Secret(value), tokenType: type)
        token.dpopKey = key
        return token
    }

    static func source(key: DPoPKey) -> BoundTokenSource {
        BoundTokenSource(first: bound("t-1", key: key), replacement: bound("t-2", key: key))
    }

    static func ath(_ token: String) -> String {
        Base64URL.encode(SHA256.hash(data: Array(token.utf8)))
    }

    private func useNonce(_ nonce: String?) -> HTTPFields {
        var fields: HTTPFields = [.wwwAuthenticate: #"DPoP error="use_dpop_nonce", error_description="nonce required""#]
        if let nonce { fields.append(HTTPField(name: Self.nonceField, value: nonce)) }
        return fields
    }

    @Test func aBoundTokenGoesAsDPoPWithAProofOfItsRequest() async throws {
        let inner = CannedTransport()
        inner.enqueue(HTTPTransportResponse(status: 200), for: api)

        _ = try await SigningTransport(wrapping: inner, tokenSource: source).send(
            HTTPTransportRequest(method: .post, url: api, body: Data("a=1".utf8)))

        let sent = try #require(inner.requests.first)
        #expect(sent.headers[values: .authorization] == ["DPoP t-1"])
        #expect(sent.headers[values: Self.dpopField].count == 1)
        let proof = try Proof(sent.headers[Self.dpopField])
        #expect(proof.header["typ"]?.stringValue == "dpop+jwt")
        #expect(proof.header["alg"]?.stringValue == "ES256")
        #expect(proof.htm == "POST")
        #expect(proof.htu == "https://api.example/v1/me")
        #expect(proof.ath == Self.ath("t-1"))
        #expect(proof.nonce == nil)
        #expect(
            try DPoPKey.thumbprint(
                of: {
                    guard case .object(let jwk)? = proof.header["jwk"] else { return [:] }
                    return jwk
                }()) == key.thumbprint)
    }

    @Test func everyRequestGetsAFreshProof() async throws {
        let inner = CannedTransport()
        inner.respond { _ in HTTPTransportResponse(status: 200) }
        let signing = SigningTransport(wrapping: inner, tokenSource: source)

        for _ in 0..<3 { _ = try await signing.send(HTTPTransportRequest(url: api)) }

        let jtis = try inner.requests.map { try Proof($0.headers[Self.dpopField]).jti }
        #expect(jtis.count == 3)
        #expect(Set(jtis.compactMap { $0 }).count == 3)
    }

    // Before: `Bearer t-1` went with no proof, a bound token presented as a bearer token.
    @Test func aBoundTokenOfAnotherRecordedTypeIsStillNeverABearerToken() async throws {
        let inner = CannedTransport()
        inner.enqueue(HTTPTransportResponse(status: 200), for: api)
        let source = BoundTokenSource(first: Self.bound("t-1", key: key, type: "Bearer"), replacement: Self.bound("t-2", key: key))

        _ = try await SigningTransport(wrapping: inner, tokenSource: source).send(HTTPTransportRequest(url: api))

        let sent = try #require(inner.requests.first)
        #expect(sent.headers[values: .authorization] == ["DPoP t-1"])
        #expect(try Proof(sent.headers[Self.dpopField]).ath == Self.ath("t-1"))
    }

    @Test func aDPoPTokenWithoutItsKeyIsAnErrorAndNothingIsSent() async throws {
        let inner = CannedTransport()
        let source = BoundTokenSource(first: Self.bound("t-1", key: nil), replacement: Self.bound("t-2", key: nil))

        let error = await #expect(throws: OAuth2Error.self) {
            _ = try await SigningTransport(wrapping: inner, tokenSource: source).send(HTTPTransportRequest(url: self.api))
        }

        #expect(error?.code == .dpopKeyMissing)
        #expect(error.map { !"\($0)".contains("t-1") } == true)
        #expect(inner.requests.isEmpty)
    }

    @Test func eachHopOfARedirectGetsAProofForItsOwnURLAndMethod() async throws {
        let inner = CannedTransport()
        let moved = URL(string: "https://api.example/v2/me")!
        let result = URL(string: "https://api.example/v2/result?id=7")!
        let elsewhere = URL(string: "https://elsewhere.example/x")!
        inner.enqueue(HTTPTransportResponse(status: 307, headers: [.location: moved.absoluteString]), for: api)
        inner.enqueue(HTTPTransportResponse(status: 303, headers: [.location: result.absoluteString]), for: moved)
        inner.enqueue(HTTPTransportResponse(status: 302, headers: [.location: elsewhere.absoluteString]), for: result)
        inner.enqueue(HTTPTransportResponse(status: 200), for: elsewhere)
        var request = HTTPTransportRequest(method: .post, url: api, body: Data("a=1".utf8), redirects: .follow)
        request.headers.append(HTTPField(name: Self.dpopField, value: "a-proof-of-the-callers"))

        let response = try await SigningTransport(wrapping: inner, tokenSource: source).send(request)

        #expect(response.status == 200)
        let sent = inner.requests
        #expect(sent.count == 4)
        #expect(sent.map { $0.headers[values: .authorization] } == [["DPoP t-1"], ["DPoP t-1"], ["DPoP t-1"], []])
        #expect(sent.map { $0.headers[values: Self.dpopField].count } == [1, 1, 1, 0])
        let proofs = try sent.prefix(3).map { try Proof($0.headers[Self.dpopField]) }
        #expect(proofs.map(\.htm) == ["POST", "POST", "GET"])
        #expect(proofs.map(\.htu) == ["https://api.example/v1/me", "https://api.example/v2/me", "https://api.example/v2/result"])
        #expect(Set(proofs.compactMap(\.jti)).count == 3)
    }

    @Test func aUseDPoPNonceIsRetriedOnceWithTheNonceAndTheNonceIsKeptForItsOrigin() async throws {
        let inner = CannedTransport()
        inner.enqueue(HTTPTransportResponse(status: 401, headers: useNonce("n-1")), for: api)
        inner.enqueue(HTTPTransportResponse(status: 200), for: api)
        let signing = SigningTransport(wrapping: inner, tokenSource: source)

        let response = try await signing.send(HTTPTransportRequest(url: api))

        #expect(response.status == 200)
        let proofs = try inner.requests.map { try Proof($0.headers[Self.dpopField]) }
        #expect(proofs.map(\.nonce) == [nil, "n-1"])
        #expect(proofs[0].jti != proofs[1].jti)
        #expect(source.calls == ["token"], "a nonce is no reason to refresh")
        #expect(signing.dpopNonces.nonce(for: "https://api.example/other") == "n-1")
        #expect(signing.dpopNonces.nonce(for: "https://elsewhere.example/") == nil)

        // The next request starts with it: no round trip for the nonce.
        inner.enqueue(HTTPTransportResponse(status: 200), for: api)
        _ = try await signing.send(HTTPTransportRequest(url: api))
        #expect(try Proof(inner.requests.last?.headers[Self.dpopField]).nonce == "n-1")
    }

    @Test func aSecondUseDPoPNonceInARowIsTheNonceLoopError() async throws {
        let inner = CannedTransport()
        inner.enqueue(HTTPTransportResponse(status: 401, headers: useNonce("n-1")), for: api)
        inner.enqueue(HTTPTransportResponse(status: 401, headers: useNonce("n-2")), for: api)
        inner.enqueue(HTTPTransportResponse(status: 200), for: api)

        let error = await #expect(throws: OAuth2Error.self) {
            _ = try await SigningTransport(wrapping: inner, tokenSource: self.source).send(HTTPTransportRequest(url: self.api))
        }

        #expect(error?.code == .dpopNonceLoop)
        #expect(error?.code.rawValue == "dpop_nonce_loop")
        #expect(inner.requests.count == 2)
        #expect(source.calls == ["token"])
    }

    @Test func aUseDPoPNonceWithoutANonceIsUnauthorizedWithoutARetry() async throws {
        let inner = CannedTransport()
        inner.enqueue(HTTPTransportResponse(status: 401, headers: useNonce(nil)), for: api)

        let error = await #expect(throws: OAuth2Error.self) {
            _ = try await SigningTransport(wrapping: inner, tokenSource: self.source).send(HTTPTransportRequest(url: self.api))
        }

        #expect(error?.code == .unauthorized)
        #expect(error?.message.contains("DPoP-Nonce") == true)
        #expect(inner.requests.count == 1)
    }

    @Test func aDPoPNonceHeaderOnAnyAnswerUpdatesTheCacheForThatOriginOnly() async throws {
        let inner = CannedTransport()
        let other = URL(string: "https://api.example:8443/x")!
        inner.enqueue(HTTPTransportResponse(status: 200, headers: [Self.nonceField: "n-api"]), for: api)
        inner.enqueue(HTTPTransportResponse(status: 200, headers: [Self.nonceField: "n-8443"]), for: other)
        inner.enqueue(HTTPTransportResponse(status: 200, headers: [Self.nonceField: "n-api-2"]), for: api)
        inner.enqueue(HTTPTransportResponse(status: 200), for: other)
        let signing = SigningTransport(wrapping: inner, tokenSource: source)

        for url in [api, other, api, other] { _ = try await signing.send(HTTPTransportRequest(url: url)) }

        let nonces = try inner.requests.map { try Proof($0.headers[Self.dpopField]).nonce }
        #expect(nonces == [nil, nil, "n-api", "n-8443"])
        #expect(signing.dpopNonces.nonce(for: api.absoluteString) == "n-api-2")
    }

    @Test func anInvalidTokenChallengeRefreshesOnceAndRetriesWithANewProof() async throws {
        let inner = CannedTransport()
        inner.enqueue(HTTPTransportResponse(status: 401, headers: [.wwwAuthenticate: #"DPoP error="invalid_token""#]), for: api)
        inner.enqueue(HTTPTransportResponse(status: 200), for: api)

        let response = try await SigningTransport(wrapping: inner, tokenSource: source).send(HTTPTransportRequest(url: api))

        #expect(response.status == 200)
        #expect(source.calls == ["token", "replacing t-1"])
        #expect(inner.requests.map { $0.headers[.authorization] } == ["DPoP t-1", "DPoP t-2"])
        let proofs = try inner.requests.map { try Proof($0.headers[Self.dpopField]) }
        #expect(proofs.map(\.ath) == [Self.ath("t-1"), Self.ath("t-2")])
    }

    @Test func aSecondInvalidTokenAfterTheRefreshIsInvalidToken() async throws {
        let inner = CannedTransport()
        let rejected: HTTPFields = [.wwwAuthenticate: #"DPoP error="invalid_token", algs="ES256""#]
        inner.enqueue(HTTPTransportResponse(status: 401, headers: rejected), for: api)
        inner.enqueue(HTTPTransportResponse(status: 401, headers: rejected), for: api)

        let error = await #expect(throws: OAuth2Error.self) {
            _ = try await SigningTransport(wrapping: inner, tokenSource: self.source).send(HTTPTransportRequest(url: self.api))
        }

        #expect(error?.code == .invalidToken)
        #expect(source.calls == ["token", "replacing t-1", "rejected t-2 invalid_token"])
    }

    // Before: `unauthorized`, "without a Bearer challenge", which said nothing of DPoP.
    @Test func aBearerTokenAnsweredWithADPoPOnlyChallengeIsDPoPRequiredWithoutARefresh() async throws {
        let inner = CannedTransport()
        inner.enqueue(HTTPTransportResponse(status: 401, headers: [.wwwAuthenticate: #"DPoP algs="ES256 PS256""#]), for: api)
        let source = BoundTokenSource(first: AccessToken(accessToken: Secret("t-1")), replacement: AccessToken(accessToken: Secret("t-2")))

        let error = await #expect(throws: OAuth2Error.self) {
            _ = try await SigningTransport(wrapping: inner, tokenSource: source).send(HTTPTransportRequest(url: self.api))
        }

        #expect(error?.code == .dpopRequired)
        #expect(error?.message.contains("DPoP") == true)
        #expect(source.calls == ["token"])
        #expect(inner.requests.count == 1)
        #expect(inner.requests.first?.headers[Self.dpopField] == nil)
    }

    @Test func aBearerTokenNeverCarriesAProof() async throws {
        let inner = CannedTransport()
        inner.enqueue(HTTPTransportResponse(status: 200, headers: [Self.nonceField: "n-1"]), for: api)
        let source = BoundTokenSource(first: AccessToken(accessToken: Secret("t-1")), replacement: AccessToken(accessToken: Secret("t-2")))
        let signing = SigningTransport(wrapping: inner, tokenSource: source)

        _ = try await signing.send(HTTPTransportRequest(url: api))

        #expect(inner.requests.first?.headers[values: .authorization] == ["Bearer t-1"])
        #expect(inner.requests.first?.headers[Self.dpopField] == nil)
    }

    @Test func aTransportMadeForAnOAuth2ClientSharesItsProvidersNonces() throws {
        let provider = try OAuth2Provider(
            configuration: OAuth2Configuration(
                clientID: "c", tokenEndpoint: URL(string: "https://idp.example/token")!),
            transport: CannedTransport())
        let client = provider.client()

        let signing = SigningTransport(wrapping: CannedTransport(), tokenSource: client)

        #expect(signing.dpopNonces === provider.dpopNonces)
        #expect(SigningTransport(wrapping: CannedTransport(), tokenSource: source).dpopNonces !== provider.dpopNonces)
    }

    @Test func sendSignsABoundStoredTokenAndItsClientsShareTheProvidersNonces() async throws {
        let harness = try ClientHarness()
        var token = Fixture.token(access: "at-bound", refresh: nil, expiresAt: harness.clock.now().addingTimeInterval(3600))
        token.tokenType = "DPoP"
        token.dpopKey = key
        token.binding = harness.provider.configuration.binding
        try await harness.store.save(token, account: "alice")
        harness.transport.enqueue(HTTPTransportResponse(status: 401, headers: useNonce("n-1")), for: Fixture.apiURL)
        harness.transport.enqueue(HTTPTransportResponse(status: 200), for: Fixture.apiURL)
        harness.transport.enqueue(HTTPTransportResponse(status: 200), for: Fixture.apiURL)

        _ = try await harness.client().send(HTTPTransportRequest(url: Fixture.apiURL))
        _ = try await harness.client().send(HTTPTransportRequest(url: Fixture.apiURL))

        let sent = harness.transport.requests(for: Fixture.apiURL)
        #expect(sent.map { $0.headers[values: .authorization] } == [["DPoP at-bound"], ["DPoP at-bound"], ["DPoP at-bound"]])
        let proofs = try sent.map { try Proof($0.headers[Self.dpopField]) }
        #expect(proofs.map(\.nonce) == [nil, "n-1", "n-1"], "the second client starts with the nonce the first was given")
        #expect(proofs.allSatisfy { $0.ath == Self.ath("at-bound") })
        #expect(harness.tokenRequests.isEmpty)
    }
}
