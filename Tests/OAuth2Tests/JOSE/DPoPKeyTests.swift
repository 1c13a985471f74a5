import Foundation
import Testing
@testable import OAuth2

@Suite struct DPoPKeyTests {
    static let now = Date(timeIntervalSince1970: 1_700_000_000.75)

    /// One key per algorithm for the whole suite: a 2048-bit RSA key takes
    /// seconds to make in a debug build.
    static let keys: [JWSAlgorithm: DPoPKey] = {
        var keys: [JWSAlgorithm: DPoPKey] = [:]
        for algorithm in DPoPKey.supportedAlgorithms {
            keys[algorithm] = try? DPoPKey.generate(algorithm: algorithm)
        }
        return keys
    }()

    static func key(_ algorithm: JWSAlgorithm) throws -> DPoPKey {
        try #require(keys[algorithm])
    }

    /// The proof's header and claims, and whether its signature verifies
    /// with the JWK its header carries (the library's JWS verifier, which
    /// is not the signer).
    static func open(_ proof: Secret) throws -> (header: [String: JSONValue], claims: [String: JSONValue], verifies: Bool) {
        let jws = try CompactJWS(proof.value)
        guard case .object(let jwkObject)? = jws.header["jwk"] else {
            Issue.record("the proof has no jwk header")
            return (jws.header, try jws.payloadObject(), false)
        }
        let jwk = try JSONWebKey(jwkObject)
        return (jws.header, try jws.payloadObject(), jwk.isValidSignature(jws.signature, for: jws.signingInput, algorithm: jws.algorithm))
    }

    // MARK: - RFC vectors

    /// RFC 7638 §3.1: the RSA key of RFC 7517 Appendix A.1 and its thumbprint.
    @Test func thumbprintMatchesRFC7638Example() throws {
        let jwk: [String: JSONValue] = [
            "kty": .string("RSA"),
            "n": .string(
                "0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw"
            ),
            "e": .string("AQAB"),
        ]
        #expect(try DPoPKey.thumbprint(of: jwk) == "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs")
    }

    /// RFC 9449 §4.2's example key and the `jkt` its §6.1 example binds a token to.
    @Test func thumbprintMatchesRFC9449ExampleKey() throws {
        let jwk: [String: JSONValue] = [
            "kty": .string("EC"), "crv": .string("P-256"),
            "x": .string("l8tFrhx-34tV3hRICRDY9zCkDlpBhF42UQUfWVAWBFs"),
            "y": .string("9VE4jf_Ok_o64zbTTlcuNJajHmt6v9TDVrU0CdvGRDA"),
        ]
        #expect(try DPoPKey.thumbprint(of: jwk) == "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I")
    }

    /// RFC 9449 §7.1: the access token of the example and its `ath`.
    @Test func athMatchesRFC9449Example() throws {
        let proof = try Self.key(.es256).proof(
            method: "GET", url: "https://resource.example.org/protectedresource",
            accessToken: Secret("Kz~8mXK1EalYznwH-LC-1fBAo.4Ljp~zsPE_NeO.gxU"), now: Self.now)
        let (_, claims, verifies) = try Self.open(proof)
        #expect(claims["ath"] == .string("fUHyO2r2Z3DZ53EsNrWBb0xWXoaNy59IiKCAqksmQEo"))
        #expect(claims["htu"] == .string("https://resource.example.org/protectedresource"))
        #expect(claims["htm"] == .string("GET"))
        #expect(verifies)
    }

    // MARK: - The proof's shape

    /// RFC 9449 §4.2's example has exactly these header members and claims.
    @Test(arguments: DPoPKey.supportedAlgorithms)
    func proofHasTheShapeOfRFC9449(_ algorithm: JWSAlgorithm) throws {
        let key = try Self.key(algorithm)
        let proof = try key.proof(method: "POST", url: "https://server.example.com/token", now: Self.now)
        let (header, claims, verifies) = try Self.open(proof)
        #expect(verifies)
        #expect(Set(header.keys) == ["typ", "alg", "jwk"])
        #expect(header["typ"] == .string("dpop+jwt"))
        #expect(header["alg"] == .string(algorithm.rawValue))
        #expect(Set(claims.keys) == ["jti", "htm", "htu", "iat"])
        #expect(claims["htm"] == .string("POST"))
        #expect(claims["htu"] == .string("https://server.example.com/token"))
        #expect(claims["iat"] == .number(1_700_000_000))
        let jti = try #require(claims["jti"]?.stringValue)
        #expect(Base64URL.decode(jti)?.count == 16)
    }

    /// The header's `jwk` is the public key with its required members only,
    /// never a private member, and its thumbprint is the key's.
    @Test(arguments: DPoPKey.supportedAlgorithms)
    func proofCarriesOnlyThePublicKey(_ algorithm: JWSAlgorithm) throws {
        let key = try Self.key(algorithm)
        let (header, _, _) = try Self.open(try key.proof(method: "GET", url: "https://api.example/", now: Self.now))
        guard case .object(let jwk)? = header["jwk"] else {
            Issue.record("no jwk")
            return
        }
        let expected: Set<String> =
            switch algorithm {
            case .es256: ["kty", "crv", "x", "y"]
            case .edDSA: ["kty", "crv", "x"]
            default: ["kty", "n", "e"]
            }
        #expect(Set(jwk.keys) == expected)
        #expect(jwk == key.publicJWK)
        #expect(try DPoPKey.thumbprint(of: jwk) == key.thumbprint)
    }

    @Test func proofCarriesTheNonceAndAthOnlyWhenGiven() throws {
        let key = try Self.key(.es256)
        let (_, bare, _) = try Self.open(try key.proof(method: "GET", url: "https://api.example/a", now: Self.now))
        #expect(bare["nonce"] == nil)
        #expect(bare["ath"] == nil)
        let (_, full, verifies) = try Self.open(
            try key.proof(method: "GET", url: "https://api.example/a", accessToken: Secret("t"), nonce: "n-1", now: Self.now))
        #expect(full["nonce"] == .string("n-1"))
        #expect(full["ath"] != nil)
        #expect(verifies)
    }

    /// A verifier that checks the signature would notice another key's:
    /// the check above can fail.
    @Test func aProofDoesNotVerifyWithAnotherKey() throws {
        let proof = try Self.key(.es256).proof(method: "GET", url: "https://api.example/", now: Self.now)
        let jws = try CompactJWS(proof.value)
        let other = try JSONWebKey(try DPoPKey.generate().publicJWK)
        #expect(!other.isValidSignature(jws.signature, for: jws.signingInput, algorithm: .es256))
    }

    @Test func everyProofHasItsOwnJTI() throws {
        let key = try Self.key(.es256)
        var seen: Set<String> = []
        for _ in 0..<100 {
            let (_, claims, _) = try Self.open(try key.proof(method: "POST", url: "https://server.example.com/token", now: Self.now))
            seen.insert(try #require(claims["jti"]?.stringValue))
        }
        #expect(seen.count == 100)
    }

    // MARK: - htu

    @Test(arguments: [
        ("https://server.example.com/token", "https://server.example.com/token"),
        ("HTTPS://Server.Example.COM/Token", "https://server.example.com/Token"),
        ("https://server.example.com:443/token", "https://server.example.com/token"),
        ("http://127.0.0.1:80/token", "http://127.0.0.1/token"),
        ("https://server.example.com:8443/token", "https://server.example.com:8443/token"),
        ("http://localhost:8443/token", "http://localhost:8443/token"),
        ("https://server.example.com", "https://server.example.com/"),
        ("https://server.example.com?x=1", "https://server.example.com/"),
        ("https://server.example.com/a/b?query=1&b=2#fragment", "https://server.example.com/a/b"),
        ("https://server.example.com/a#fragment", "https://server.example.com/a"),
        ("https://user:pass@server.example.com/a", "https://server.example.com/a"),
        ("https://[::1]:8443/a", "https://[::1]:8443/a"),
    ])
    func htuIsTheNormalisedURLWithoutQueryOrFragment(_ url: String, _ htu: String) throws {
        #expect(try DPoPKey.targetURI(url) == htu)
    }

    @Test(arguments: ["ftp://server.example.com/a", "/token", "https://", "not a url", "mailto:a@example.com"])
    func htuRefusesWhatIsNotAnHTTPURL(_ url: String) {
        #expect(throws: OAuth2Error.self) { try DPoPKey.targetURI(url) }
        #expect(throws: OAuth2Error.self) { try Self.key(.es256).proof(method: "GET", url: url, now: Self.now) }
    }

    // MARK: - Algorithms

    @Test(arguments: DPoPKey.supportedAlgorithms)
    func everySupportedAlgorithmMakesAKey(_ algorithm: JWSAlgorithm) throws {
        let key = try Self.key(algorithm)
        #expect(key.algorithm == algorithm)
        #expect(key.thumbprint.count == 43)
    }

    @Test(arguments: [JWSAlgorithm.hs256, .es384, .rs512, "none"])
    func anotherAlgorithmIsRefused(_ algorithm: JWSAlgorithm) {
        #expect(throws: OAuth2Error.self) { try DPoPKey.generate(algorithm: algorithm) }
        do {
            _ = try DPoPKey.generate(algorithm: algorithm)
        } catch {
            #expect(error.code == .invalidConfiguration)
        }
    }

    @Test func twoKeysHaveDifferentThumbprints() throws {
        #expect(try DPoPKey.generate().thumbprint != DPoPKey.generate().thumbprint)
    }

    @Test func theAlgorithmIsChosenAgainstTheProvidersList() throws {
        #expect(try DPoPKey.algorithm(providerAlgorithms: nil) == .es256)
        #expect(try DPoPKey.algorithm(providerAlgorithms: []) == .es256)
        #expect(try DPoPKey.algorithm(preferred: .edDSA, providerAlgorithms: nil) == .edDSA)
        #expect(try DPoPKey.algorithm(providerAlgorithms: ["RS256", "ES256"]) == .es256)
        #expect(try DPoPKey.algorithm(providerAlgorithms: ["RS256", "PS256"]) == .ps256)
        #expect(try DPoPKey.algorithm(preferred: .rs256, providerAlgorithms: ["RS256", "ES256"]) == .rs256)
        #expect(try DPoPKey.algorithm(preferred: .edDSA, providerAlgorithms: ["ES256"]) == .es256)
        #expect(throws: OAuth2Error.self) { try DPoPKey.algorithm(providerAlgorithms: ["ES384", "HS256"]) }
    }

    /// A preferred algorithm no key can be made for is refused at once, not
    /// returned as the choice to fail when the key is made.
    @Test func aPreferredAlgorithmNoKeyCanBeMadeForIsRefused() {
        #expect(throws: OAuth2Error.self) { try DPoPKey.algorithm(preferred: .hs256, providerAlgorithms: nil) }
        #expect(throws: OAuth2Error.self) { try DPoPKey.algorithm(preferred: .es384, providerAlgorithms: ["ES384", "ES256"]) }
    }

    // MARK: - Codable

    @Test(arguments: DPoPKey.supportedAlgorithms)
    func aDecodedKeyIsTheSameKeyAndStillSigns(_ algorithm: JWSAlgorithm) throws {
        let key = try Self.key(algorithm)
        let data = try JSONEncoder().encode(key)
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect(Set(object.keys) == ["alg", "d"])
        #expect(object["alg"] as? String == algorithm.rawValue)
        let decoded = try JSONDecoder().decode(DPoPKey.self, from: data)
        #expect(decoded == key)
        #expect(decoded.thumbprint == key.thumbprint)
        #expect(decoded.publicJWK == key.publicJWK)
        // Signed by the decoded key, verified with the original's public key.
        let jws = try CompactJWS(try decoded.proof(method: "POST", url: "https://server.example.com/token", now: Self.now).value)
        #expect(try JSONWebKey(key.publicJWK).isValidSignature(jws.signature, for: jws.signingInput, algorithm: algorithm))
    }

    @Test(arguments: [
        #"{"alg":"ES256","d":"AAAA"}"#,
        #"{"alg":"ES256","d":"not base64url!"}"#,
        #"{"alg":"HS256","d":"c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LXNlY3JldA"}"#,
        #"{"alg":"EdDSA","d":""}"#,
        #"{"alg":"RS256","d":"AAAA"}"#,
        #"{"d":"AAAA"}"#,
        #"{"alg":"ES256"}"#,
    ])
    func aDamagedKeyIsADecodingError(_ json: String) {
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(DPoPKey.self, from: Data(json.utf8)) }
    }

    // MARK: - Redaction

    /// Nothing a key or a token bound to it shows contains the private key.
    @Test(arguments: DPoPKey.supportedAlgorithms)
    func noDescriptionShowsThePrivateKey(_ algorithm: JWSAlgorithm) throws {
        let key = try Self.key(algorithm)
        let object = try #require(try JSONSerialization.jsonObject(with: JSONEncoder().encode(key)) as? [String: Any])
        let privateKey = try #require(object["d"] as? String)
        var token = AccessToken(accessToken: Secret("at-1"), tokenType: "DPoP")
        token.dpopKey = key
        var dumped = ""
        dump(key, to: &dumped)
        var dumpedToken = ""
        dump(token, to: &dumpedToken)
        let shown = [
            key.description, key.debugDescription, String(reflecting: key), "\(key)", dumped,
            token.description, String(reflecting: token), dumpedToken,
        ]
        for text in shown {
            #expect(!text.contains(privateKey))
            #expect(!text.contains(String(privateKey.prefix(16))))
        }
        #expect(key.description.contains(key.thumbprint))
        #expect(dumpedToken.contains(key.thumbprint))
    }
}
