import Foundation
@testable import OAuth2
import OAuth2Testing
import Testing

/// DPoP at the token endpoint (RFC 9449 §5, §8, §10): proofs on every grant's
/// token requests, the key made per grant and kept with its tokens, nonces,
/// and the answers a DPoP request may get.
@Suite struct OAuth2ProviderDPoPTests {
    static let proofField = HTTPField.Name("DPoP")!
    static let nonceField = HTTPField.Name("DPoP-Nonce")!
    static let useNonce = #"{"error":"use_dpop_nonce","error_description":"Authorization server requires nonce in DPoP proof"}"#
    static let deviceURL = URL(string: "https://idp.example/oauth/device")!

    static func configuration(allowsBearerDowngrade: Bool = false) throws -> OAuth2Configuration {
        var configuration = try Fixture.configuration(allowsPasswordGrant: true)
        configuration.deviceAuthorizationEndpoint = deviceURL
        configuration.dpop = DPoPSettings(allowsBearerDowngrade: allowsBearerDowngrade)
        return configuration
    }

    static func tokenJSON(access: String = Fixture.accessToken, refresh: String? = Fixture.refreshToken, type: String = "DPoP")
        -> String
    {
        var fields = [#""access_token":"\#(access)""#, #""token_type":"\#(type)""#, #""expires_in":3600"#]
        if let refresh { fields.append(#""refresh_token":"\#(refresh)""#) }
        return "{\(fields.joined(separator: ","))}"
    }

    /// A request's DPoP proof, verified with the JWK it carries: its claims
    /// and the thumbprint of that JWK.
    struct Proof {
        var claims: [String: JSONValue]
        var thumbprint: String
        var jti: String { claims["jti"]?.stringValue ?? "" }
        var nonce: String? { claims["nonce"]?.stringValue }
    }

    static func proof(of request: HTTPTransportRequest?) throws -> Proof {
        let value = try #require(request?.headers[proofField], "the request carries no DPoP proof")
        let jws = try CompactJWS(value)
        #expect(jws.header["typ"] == .string("dpop+jwt"))
        guard case .object(let jwk)? = jws.header["jwk"] else { throw ProofError() }
        #expect(try JSONWebKey(jwk).isValidSignature(jws.signature, for: jws.signingInput, algorithm: jws.algorithm))
        return Proof(claims: try jws.payloadObject(), thumbprint: try DPoPKey.thumbprint(of: jwk))
    }

    struct ProofError: Error {}

    static func boundToken(_ harness: ClientHarness, key: DPoPKey, expiresIn: TimeInterval) -> AccessToken {
        var token = Fixture.token(expiresAt: harness.clock.now().addingTimeInterval(expiresIn))
        token.tokenType = "DPoP"
        token.dpopKey = key
        token.binding = harness.provider.configuration.binding
        return token
    }

    // MARK: - Every grant

    enum GrantCase: String, CaseIterable, Sendable {
        case password, clientCredentials, assertion
    }

    @Test(arguments: GrantCase.allCases)
    func everyGrantsTokenRequestCarriesAProofOfANewKeyAndItsTokenKeepsTheKey(_ grant: GrantCase) async throws {
        let harness = try ClientHarness(configuration: Self.configuration())
        var thumbprints: Set<String> = []
        for account in ["alice", "bob"] {
            harness.transport.enqueue(json: Self.tokenJSON(access: "at-\(account)"), for: Fixture.tokenURL)
            let token: AccessToken
            switch grant {
            case .password:
                token = try await harness.client(account).authenticate(.password(username: account, password: Secret("pw-123456789")))
            case .clientCredentials:
                token = try await harness.client(account).authenticate(.clientCredentials)
            case .assertion:
                token = try await harness.client(account).authenticate(
                    .assertion(type: "urn:ietf:params:oauth:grant-type:jwt-bearer", assertion: Secret("eyJ.assertion.sig")))
            }
            let proof = try Self.proof(of: harness.tokenRequests.last)
            #expect(proof.claims["htm"] == .string("POST"))
            #expect(proof.claims["htu"] == .string(Fixture.tokenURL.absoluteString))
            #expect(proof.claims["ath"] == nil)
            #expect(token.tokenType == "DPoP")
            #expect(token.dpopKey?.thumbprint == proof.thumbprint)
            let stored = try #require(try await harness.store.load(account: account))
            #expect(stored.dpopKey == token.dpopKey)
            thumbprints.insert(proof.thumbprint)
        }
        #expect(thumbprints.count == 2, "each grant has a key of its own")
    }

    @Test func aBearerConfigurationSendsNoProof() async throws {
        let harness = try ClientHarness()
        harness.transport.enqueue(json: Fixture.tokenJSON(refresh: nil), for: Fixture.tokenURL)
        let token = try await harness.client().authenticate(.clientCredentials)
        #expect(harness.tokenRequests.first?.headers[Self.proofField] == nil)
        #expect(token.dpopKey == nil)
    }

    /// The key is made when the authorization starts: the request names its
    /// thumbprint (`dpop_jkt`), and the code is exchanged with its proof, on
    /// another instance too (the pending authorization is `Codable`).
    @Test func theAuthorizationRequestNamesTheKeyTheCodeIsExchangedWith() async throws {
        let harness = try ClientHarness(configuration: Self.configuration())
        let pending = try await harness.provider.authorizationURL(redirectURI: Fixture.redirectURI)
        let key = try #require(pending.dpopKey)
        let query = try #require(URLComponents(url: pending.url, resolvingAgainstBaseURL: false)?.queryItems)
        #expect(query.filter { $0.name == "dpop_jkt" }.map(\.value) == [key.thumbprint])

        let kept = try JSONDecoder().decode(PendingAuthorization.self, from: JSONEncoder().encode(pending))
        #expect(kept.dpopKey == key)
        let other = try ClientHarness(configuration: Self.configuration())
        other.transport.enqueue(json: Self.tokenJSON(), for: Fixture.tokenURL)
        let redirect = "\(Fixture.redirectURI.absoluteString)?code=code-abc&state=\(pending.state)"
        let token = try await other.client().authenticate(.authorizationCode(redirect: redirect, pending: kept))
        #expect(try Self.proof(of: other.tokenRequests.first).thumbprint == key.thumbprint)
        #expect(token.dpopKey == key)
    }

    @Test func aBearerAuthorizationRequestHasNoDPoPJKT() async throws {
        let harness = try ClientHarness()
        let pending = try await harness.provider.authorizationURL(redirectURI: Fixture.redirectURI)
        #expect(pending.dpopKey == nil)
        #expect(!pending.url.absoluteString.contains("dpop_jkt"))
    }

    /// The pending authorization holds the private key: nothing it shows does.
    @Test func aPendingAuthorizationNeverShowsItsKey() async throws {
        let harness = try ClientHarness(configuration: Self.configuration())
        let pending = try await harness.provider.authorizationURL(redirectURI: Fixture.redirectURI)
        let encodedKey = try #require(
            try JSONSerialization.jsonObject(with: JSONEncoder().encode(pending.dpopKey)) as? [String: Any])
        let privateKey = try #require(encodedKey["d"] as? String)
        var dumped = ""
        dump(pending, to: &dumped)
        for text in [pending.description, String(reflecting: pending), dumped] {
            #expect(!text.contains(privateKey))
        }
    }

    @Test func everyDevicePollCarriesANewProofOfTheGrantsOneKey() async throws {
        let harness = try ClientHarness(configuration: Self.configuration())
        harness.transport.enqueue(
            json:
                #"{"device_code":"dc-1234567890","user_code":"WDJB-MJHT","verification_uri":"https://idp.example/device","expires_in":600,"interval":5}"#,
            for: Self.deviceURL)
        harness.transport.enqueue(json: #"{"error":"authorization_pending"}"#, status: 400, for: Fixture.tokenURL)
        harness.transport.enqueue(json: #"{"error":"authorization_pending"}"#, status: 400, for: Fixture.tokenURL)
        harness.transport.enqueue(json: Self.tokenJSON(), for: Fixture.tokenURL)
        let client = harness.client()
        let authorization = try await client.startDeviceAuthorization()
        let polling = Task { [client] in try await client.authenticate(.deviceCode(authorization)) }
        for _ in 0..<3 {
            try await harness.clock.waitForSleepers()
            harness.clock.advance(by: .seconds(5))
        }
        let token = try await polling.value
        let proofs = try harness.tokenRequests.map { try Self.proof(of: $0) }
        #expect(proofs.count == 3)
        #expect(Set(proofs.map(\.jti)).count == 3)
        #expect(Set(proofs.map(\.thumbprint)) == [try #require(token.dpopKey).thumbprint])
    }

    // MARK: - Nonces

    @Test func aNonceDemandIsRetriedOnceWithTheServersNonce() async throws {
        let harness = try ClientHarness(configuration: Self.configuration())
        harness.transport.enqueue(json: Self.useNonce, status: 400, headers: [Self.nonceField: "n-1"], for: Fixture.tokenURL)
        harness.transport.enqueue(json: Self.tokenJSON(), headers: [Self.nonceField: "n-2"], for: Fixture.tokenURL)
        let token = try await harness.client().authenticate(.clientCredentials)
        let proofs = try harness.tokenRequests.map { try Self.proof(of: $0) }
        #expect(proofs.count == 2)
        #expect(proofs[0].nonce == nil)
        #expect(proofs[1].nonce == "n-1")
        #expect(proofs[0].jti != proofs[1].jti)
        #expect(proofs[0].thumbprint == proofs[1].thumbprint)
        #expect(token.dpopKey?.thumbprint == proofs[1].thumbprint)
        // The nonce of the last answer is the one the next proof carries.
        #expect(harness.provider.dpopNonces.nonce(for: Fixture.tokenURL.absoluteString) == "n-2")
        harness.transport.enqueue(json: Self.tokenJSON(), for: Fixture.tokenURL)
        try await harness.client("bob").authenticate(.clientCredentials)
        #expect(try Self.proof(of: harness.tokenRequests.last).nonce == "n-2")
        #expect(harness.tokenRequests.count == 3)
    }

    @Test func aSecondNonceDemandIsANonceLoop() async throws {
        let harness = try ClientHarness(configuration: Self.configuration())
        for nonce in ["n-1", "n-2", "n-3"] {
            harness.transport.enqueue(json: Self.useNonce, status: 400, headers: [Self.nonceField: nonce], for: Fixture.tokenURL)
        }
        let error = await oauth2Error { try await harness.client().authenticate(.clientCredentials) }
        #expect(error?.code == .dpopNonceLoop)
        #expect(harness.tokenRequests.count == 2)
        #expect(try await harness.store.load(account: "alice") == nil)
    }

    @Test func aNonceDemandWithoutANonceIsTheProvidersError() async throws {
        let harness = try ClientHarness(configuration: Self.configuration())
        harness.transport.enqueue(json: Self.useNonce, status: 400, for: Fixture.tokenURL)
        let error = await oauth2Error { try await harness.client().authenticate(.clientCredentials) }
        #expect(error?.code == "use_dpop_nonce")
        #expect(harness.tokenRequests.count == 1)
    }

    /// RFC 9449 §8: the server asks for the nonce before it spends the code,
    /// so the exchange is sent again with the same code, once.
    @Test func aCodeExchangeIsRetriedOnceWithTheSameCode() async throws {
        let harness = try ClientHarness(configuration: Self.configuration())
        let client = harness.client()
        let pending = try await client.authorizationURL(redirectURI: Fixture.redirectURI)
        harness.transport.enqueue(json: Self.useNonce, status: 400, headers: [Self.nonceField: "n-1"], for: Fixture.tokenURL)
        harness.transport.enqueue(json: Self.tokenJSON(), for: Fixture.tokenURL)
        let token = try await client.authenticate(
            .authorizationCode(redirect: "\(Fixture.redirectURI.absoluteString)?code=code-abc&state=\(pending.state)"))
        #expect(harness.tokenRequests.map { Fixture.formFields($0.body)["code"] } == ["code-abc", "code-abc"])
        #expect(try Self.proof(of: harness.tokenRequests.last).nonce == "n-1")
        #expect(token.dpopKey == pending.dpopKey)
    }

    // MARK: - Refresh

    /// The stored token's key signs its refresh, with DPoP off in the
    /// configuration (a CLI command after `--dpop`), and the new token keeps it.
    @Test func aRefreshUsesTheStoredKeyWhateverTheConfigurationAndKeepsIt() async throws {
        let harness = try ClientHarness()
        let key = try DPoPKey.generate()
        try await harness.store.save(Self.boundToken(harness, key: key, expiresIn: -10), account: "alice")
        harness.transport.enqueue(json: Self.tokenJSON(access: "at-2", refresh: "rt-2"), for: Fixture.tokenURL)
        let token = try await harness.client().refreshAccessToken()
        #expect(try Self.proof(of: harness.tokenRequests.first).thumbprint == key.thumbprint)
        #expect(Fixture.formFields(harness.tokenRequests.first?.body)["refresh_token"] == Fixture.refreshToken)
        #expect(token.dpopKey == key)
        #expect(token.authorizationField.value == "DPoP at-2")
        #expect(try await harness.store.load(account: "alice")?.dpopKey == key)
    }

    /// A refresh retried for a nonce is one refresh: one lock, one save.
    @Test func aRefreshRetriedForANonceIsOneRefresh() async throws {
        let harness = try ClientHarness(configuration: Self.configuration())
        let key = try DPoPKey.generate()
        try await harness.store.save(Self.boundToken(harness, key: key, expiresIn: -10), account: "alice")
        let saves = harness.store.saveCount
        harness.transport.enqueue(json: Self.useNonce, status: 400, headers: [Self.nonceField: "n-1"], for: Fixture.tokenURL)
        harness.transport.enqueue(json: Self.tokenJSON(access: "at-2", refresh: "rt-2"), for: Fixture.tokenURL)
        let delegate = RecordingDelegate()
        let token = try await harness.client(delegate: delegate).refreshAccessToken()
        #expect(token.accessToken.value == "at-2")
        #expect(harness.tokenRequests.count == 2)
        #expect(harness.store.lockCount == 1)
        #expect(harness.store.saveCount == saves + 1)
        #expect(delegate.events == [.refreshedAccessToken(token)])
    }

    // MARK: - Bearer answers

    @Test func aBearerAnswerToAGrantIsRefused() async throws {
        let harness = try ClientHarness(configuration: Self.configuration())
        harness.transport.enqueue(json: Self.tokenJSON(type: "Bearer"), for: Fixture.tokenURL)
        let error = await oauth2Error { try await harness.client().authenticate(.clientCredentials) }
        #expect(error?.code == .dpopDowngraded)
        #expect(try await harness.store.load(account: "alice") == nil)
    }

    @Test func anAllowedBearerAnswerIsKeptWithoutTheKey() async throws {
        let harness = try ClientHarness(configuration: Self.configuration(allowsBearerDowngrade: true))
        harness.transport.enqueue(json: Self.tokenJSON(type: "Bearer"), for: Fixture.tokenURL)
        let token = try await harness.client().authenticate(.clientCredentials)
        #expect(token.dpopKey == nil)
        #expect(token.authorizationField.value == "Bearer \(Fixture.accessToken)")
        #expect(try await harness.store.load(account: "alice")?.dpopKey == nil)
    }

    /// A refused downgrade on refresh keeps what the provider issued: the
    /// rotated refresh token is stored, still bound to the key, and the bearer
    /// access token is never presented; the next use refreshes with a proof.
    @Test func aRefusedDowngradeOnRefreshKeepsTheRotatedRefreshToken() async throws {
        let harness = try ClientHarness(configuration: Self.configuration())
        let key = try DPoPKey.generate()
        try await harness.store.save(Self.boundToken(harness, key: key, expiresIn: -10), account: "alice")
        harness.transport.enqueue(json: Self.tokenJSON(access: "at-bearer", refresh: "rt-2", type: "Bearer"), for: Fixture.tokenURL)
        let client = harness.client()
        let error = await oauth2Error { try await client.refreshAccessToken() }
        #expect(error?.code == .dpopDowngraded)
        let stored = try #require(try await harness.store.load(account: "alice"))
        #expect(stored.refreshToken?.value == "rt-2")
        #expect(stored.dpopKey == key)
        #expect(stored.isExpired(at: harness.clock.now()))

        // The next request refreshes first, with the kept refresh token and a
        // proof of the key, and never shows the bearer token to the resource.
        harness.transport.respond { request in
            if request.url == Fixture.tokenURL {
                return HTTPTransportResponse(
                    status: 200, headers: [.contentType: "application/json"],
                    body: Data(Self.tokenJSON(access: "at-3", refresh: "rt-3").utf8))
            }
            #expect(request.authorization?.contains("at-bearer") != true)
            return HTTPTransportResponse(status: 200)
        }
        let response = try await client.send(HTTPTransportRequest(method: .get, url: Fixture.apiURL))
        #expect(response.status == 200)
        let refresh = try #require(harness.tokenRequests.last)
        #expect(Fixture.formFields(refresh.body)["refresh_token"] == "rt-2")
        #expect(try Self.proof(of: refresh).thumbprint == key.thumbprint)
        #expect(try await harness.store.load(account: "alice")?.accessToken.value == "at-3")
        #expect(try await harness.store.load(account: "alice")?.dpopKey == key)
    }

    // MARK: - Revocation and deletion

    @Test func revokingABoundTokenSendsProofsAndDeletesItsKey() async throws {
        let harness = try ClientHarness()
        let key = try DPoPKey.generate()
        try await harness.store.save(Self.boundToken(harness, key: key, expiresIn: 3600), account: "alice")
        harness.transport.enqueue(json: "{}", for: Fixture.revokeURL)
        harness.transport.enqueue(json: "{}", for: Fixture.revokeURL)
        try await harness.client().revoke()
        let proofs = try harness.transport.requests(for: Fixture.revokeURL).map { try Self.proof(of: $0) }
        #expect(proofs.count == 2)
        #expect(proofs.allSatisfy { $0.thumbprint == key.thumbprint && $0.claims["htu"] == .string(Fixture.revokeURL.absoluteString) })
        #expect(try await harness.store.load(account: "alice") == nil)
    }

    @Test func revokingABearerTokenSendsNoProof() async throws {
        let harness = try ClientHarness(configuration: Self.configuration())
        try await harness.seed(expiresIn: 3600)
        harness.transport.enqueue(json: "{}", for: Fixture.revokeURL)
        harness.transport.enqueue(json: "{}", for: Fixture.revokeURL)
        try await harness.client().revoke()
        #expect(harness.transport.requests(for: Fixture.revokeURL).allSatisfy { $0.headers[Self.proofField] == nil })
    }
}
