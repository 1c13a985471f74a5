import Crypto
import Foundation
import Testing
import _CryptoExtras
@testable import OAuth2

@Suite struct JOSEVerificationTests {
    typealias F = JOSEFixtures

    // MARK: The RFCs' vectors

    @Test func theRS256ExampleOfRFC7515VerifiesWithItsKey() throws {
        let jws = try CompactJWS(F.rfc7515RS256)
        #expect(jws.algorithm == .rs256)
        #expect(jws.keyID == nil)
        let key = try jws.verify(with: F.keySet(F.rfcRSAJWK), allowedAlgorithms: [.rs256])
        #expect(key.keyType == "RSA")
        let claims = try jws.payloadObject()
        #expect(claims["iss"] == .string("joe"))
        #expect(claims["exp"] == .number(1_300_819_380))
        #expect(claims["http://example.com/is_root"] == .bool(true))
    }

    @Test func theES256ExampleOfRFC7515VerifiesWithItsKey() throws {
        let jws = try CompactJWS(F.rfc7515ES256)
        let key = try jws.verify(with: F.keySet(F.rfcECJWK), allowedAlgorithms: [.es256])
        #expect(key.keyType == "EC")
    }

    @Test func theEd25519ExampleOfRFC8037VerifiesWithItsKey() throws {
        let jws = try CompactJWS(F.rfc8037EdDSA)
        #expect(jws.algorithm == .edDSA)
        #expect(String(decoding: jws.payload, as: UTF8.self) == "Example of Ed25519 signing")
        try jws.verify(with: F.keySet(F.rfcOKPJWK), allowedAlgorithms: [.edDSA])
    }

    @Test func theEd25519PrivateKeyOfRFC8037HasItsPublicKeyAndSignsVerifiably() throws {
        let key = try JWTSigningKey.ed25519(rawRepresentation: F.hex(F.rfc8037Seed))
        #expect(key.algorithm == .edDSA)
        #expect(key.publicJWK?["x"] == .string(F.rfc8037X))
        let input = Array("eyJhbGciOiJFZERTQSJ9.RXhhbXBsZSBvZiBFZDI1NTE5IHNpZ25pbmc".utf8)
        let signature = try key.sign(input)
        #expect(try JSONWebKey(F.rfcOKPJWK).isValidSignature(signature, for: input, algorithm: .edDSA))
    }

    // MARK: Round trips through the public JWK

    static let claims: [String: JSONValue] = [
        "iss": .string("https://id.example"), "sub": .string("alice"), "n": .number(1_700_000_000), "ok": .bool(true),
    ]

    static func roundTrip(_ key: JWTSigningKey) throws {
        let token = try JWT.sign(claims: claims, key: key)
        let jws = try CompactJWS(token.value)
        #expect(jws.algorithm == key.algorithm)
        #expect(jws.keyID == key.keyID)
        let verifier = try jws.verify(with: F.keySet(of: key), allowedAlgorithms: [key.algorithm])
        #expect(verifier.keyID == key.keyID)
        #expect(try jws.payloadObject() == claims)
    }

    @Test(arguments: [JWSAlgorithm.rs256, .rs384, .rs512, .ps256, .ps384, .ps512])
    func anRSAKeyOfPKCS1PEMSignsWhatItsJWKVerifies(algorithm: JWSAlgorithm) throws {
        try Self.roundTrip(JWTSigningKey.rsa(pem: F.rsaKey.pemRepresentation, algorithm: algorithm, keyID: "rsa-1"))
    }

    @Test func anRSAKeyOfPKCS8PEMSignsWhatItsJWKVerifies() throws {
        #expect(F.rsaKey.pkcs8PEMRepresentation.hasPrefix("-----BEGIN PRIVATE KEY-----"))
        try Self.roundTrip(JWTSigningKey.rsa(pem: F.rsaKey.pkcs8PEMRepresentation, keyID: "rsa-8"))
    }

    @Test func ecKeysOfEachCurveSignWithTheirAlgorithm() throws {
        let p256 = try JWTSigningKey.ecdsa(pem: P256.Signing.PrivateKey().pemRepresentation, keyID: "p256")
        let p384 = try JWTSigningKey.ecdsa(pem: P384.Signing.PrivateKey().pemRepresentation, keyID: "p384")
        let p521 = try JWTSigningKey.ecdsa(pem: P521.Signing.PrivateKey().pemRepresentation)
        #expect(p256.algorithm == .es256)
        #expect(p384.algorithm == .es384)
        #expect(p521.algorithm == .es512)
        #expect(p521.publicJWK?["crv"] == .string("P-521"))
        for key in [p256, p384, p521] {
            try Self.roundTrip(key)
        }
    }

    @Test func ecKeysOfSEC1PEMSignToo() throws {
        let p256 = try JWTSigningKey.ecdsa(pem: F.sec1P256, keyID: "sec1")
        let p384 = try JWTSigningKey.ecdsa(pem: F.sec1P384)
        #expect(p256.algorithm == .es256)
        #expect(p384.algorithm == .es384)
        try Self.roundTrip(p256)
        try Self.roundTrip(p384)
    }

    @Test func aParsedTokenShowsOnlyItsAlgorithmAndKid() throws {
        let jws = try CompactJWS(F.rfc7515RS256)
        var dumped = ""
        dump(jws, to: &dumped)
        let parts = F.rfc7515RS256.split(separator: ".")
        for text in [String(describing: jws), String(reflecting: jws), dumped] {
            #expect(text.contains("RS256"))
            #expect(!text.contains("joe"))
            #expect(parts.allSatisfy { !text.contains($0) })
        }
    }

    @Test func anEd25519KeySignsWhatItsJWKVerifies() throws {
        try Self.roundTrip(JWTSigningKey.ed25519(rawRepresentation: Curve25519.Signing.PrivateKey().rawRepresentation, keyID: "ed"))
    }

    @Test func thePublicJWKNamesTheKeyForSigningOnly() throws {
        let key = try JWTSigningKey.rsa(pem: F.rsaKey.pemRepresentation, algorithm: .ps256, keyID: "k")
        let jwk = try #require(key.publicJWK)
        #expect(jwk["kty"] == .string("RSA"))
        #expect(jwk["alg"] == .string("PS256"))
        #expect(jwk["use"] == .string("sig"))
        #expect(jwk["kid"] == .string("k"))
        #expect(jwk["e"] == .string("AQAB"))
        #expect(jwk["d"] == nil)
        #expect(try JWTSigningKey.hmac(.opaque(String(repeating: "s", count: 32))).publicJWK == nil)
    }

    // MARK: Hostile tokens

    @Test func algNoneIsRefusedWithOrWithoutASignaturePart() throws {
        let set = try F.keySet(F.rfcRSAJWK)
        let unsigned = "\(F.b64(#"{"alg":"none"}"#)).\(F.rfcPayload)."
        let jws = try CompactJWS(unsigned)
        #expect(F.error { try jws.verify(with: set, allowedAlgorithms: [.rs256, "none"]) }?.code == .unsupportedAlgorithm)
        let twoParts = "\(F.b64(#"{"alg":"none"}"#)).\(F.rfcPayload)"
        #expect(F.error { _ = try CompactJWS(twoParts) }?.code == .invalidJWT)
    }

    @Test func hs256KeyedWithTheProvidersPublicKeyNeverVerifies() throws {
        let publicKey = F.rsaKey.publicKey
        let jwk = try #require(try JWTSigningKey.rsa(pem: F.rsaKey.pemRepresentation, keyID: "k1").publicJWK)
        let set = try F.keySet(jwk)
        let jwkText = String(decoding: try JOSEJSON.serialize(.object(jwk)), as: UTF8.self)
        let confusedKeys: [[UInt8]] = [
            Array(publicKey.pemRepresentation.utf8),
            Array(publicKey.pkcs1PEMRepresentation.utf8),
            Array(publicKey.derRepresentation),
            Array(publicKey.pkcs1DERRepresentation),
            Array(jwkText.utf8),
        ]
        for secret in confusedKeys {
            for header in [#"{"alg":"HS256","kid":"k1"}"#, #"{"alg":"HS256"}"#] {
                let input = "\(F.b64(header)).\(F.rfcPayload)"
                let mac = HMAC<SHA256>.authenticationCode(for: Array(input.utf8), using: SymmetricKey(data: secret))
                let jws = try CompactJWS("\(input).\(F.b64(Array(mac)))")
                let error = F.error { try jws.verify(with: set, allowedAlgorithms: [.rs256, .hs256]) }
                #expect(error?.code == .unsupportedAlgorithm)
            }
        }
    }

    @Test func aValidSignatureOfAnotherKeyWithTheSameKidIsInvalid() throws {
        let published = try JWTSigningKey.rsa(pem: F.rsaKey.pemRepresentation, keyID: "k1")
        let attacker = try JWTSigningKey.rsa(pem: F.otherRSAKey.pemRepresentation, keyID: "k1")
        let token = try JWT.sign(claims: ["sub": .string("mallory")], key: attacker)
        let jws = try CompactJWS(token.value)
        #expect(F.error { try jws.verify(with: F.keySet(of: published), allowedAlgorithms: [.rs256]) }?.code == .invalidSignature)
    }

    @Test func aKidNotInTheSetIsAnUnknownKey() throws {
        let key = try JWTSigningKey.ecdsa(pem: P256.Signing.PrivateKey().pemRepresentation, keyID: "new")
        var jwk = try #require(key.publicJWK)
        jwk["kid"] = .string("old")
        let jws = try CompactJWS(JWT.sign(claims: [:], key: key).value)
        let error = F.error { try jws.verify(with: F.keySet(jwk), allowedAlgorithms: [.es256]) }
        #expect(error?.code == .unknownSigningKey)
        #expect(error?.message.contains("new") == true)
    }

    @Test func anAlgorithmOutsideTheAllowListIsRefused() throws {
        let jws = try CompactJWS(F.rfc7515ES256)
        #expect(F.error { try jws.verify(with: F.keySet(F.rfcECJWK), allowedAlgorithms: [.rs256]) }?.code == .unsupportedAlgorithm)
        let unknown = try CompactJWS("\(F.b64(#"{"alg":"ES256K"}"#)).\(F.rfcPayload).AAAA")
        #expect(F.error { try unknown.verify(with: F.keySet(F.rfcECJWK), allowedAlgorithms: ["ES256K"]) }?.code == .unsupportedAlgorithm)
    }

    @Test func aHeaderAlgOtherThanTheKeysAlgFindsNoKey() throws {
        let key = try JWTSigningKey.rsa(pem: F.rsaKey.pemRepresentation, algorithm: .ps256, keyID: "k1")
        var jwk = try #require(key.publicJWK)
        jwk["alg"] = .string("RS256")
        let jws = try CompactJWS(JWT.sign(claims: [:], key: key).value)
        let error = F.error { try jws.verify(with: F.keySet(jwk), allowedAlgorithms: [.rs256, .ps256]) }
        #expect(error?.code == .unknownSigningKey)
    }

    @Test func aKeyForEncryptionOrWithoutVerifyIsNotUsed() throws {
        let jws = try CompactJWS(F.rfc7515ES256)
        var encryption = F.rfcECJWK
        encryption["use"] = .string("enc")
        #expect(F.error { try jws.verify(with: F.keySet(encryption), allowedAlgorithms: [.es256]) }?.code == .unknownSigningKey)
        var signOnly = F.rfcECJWK
        signOnly["key_ops"] = .array([.string("sign")])
        #expect(F.error { try jws.verify(with: F.keySet(signOnly), allowedAlgorithms: [.es256]) }?.code == .unknownSigningKey)
        var verify = F.rfcECJWK
        verify["key_ops"] = .array([.string("verify")])
        verify["use"] = .string("sig")
        try jws.verify(with: F.keySet(verify), allowedAlgorithms: [.es256])
    }

    @Test func anES256SignatureInDERFormIsRefused() throws {
        let parts = F.rfc7515ES256.split(separator: ".").map(String.init)
        let raw = try #require(Base64URL.decode(parts[2]))
        let der = try P256.Signing.ECDSASignature(rawRepresentation: raw).derRepresentation
        let jws = try CompactJWS("\(parts[0]).\(parts[1]).\(F.b64(Array(der)))")
        #expect(F.error { try jws.verify(with: F.keySet(F.rfcECJWK), allowedAlgorithms: [.es256]) }?.code == .invalidSignature)
    }

    @Test func aTamperedPayloadIsAnInvalidSignature() throws {
        let parts = F.rfc7515RS256.split(separator: ".").map(String.init)
        let forged = "\(parts[0]).\(F.b64(#"{"iss":"joe","exp":4102444800}"#)).\(parts[2])"
        let jws = try CompactJWS(forged)
        let error = F.error { try jws.verify(with: F.keySet(F.rfcRSAJWK), allowedAlgorithms: [.rs256]) }
        #expect(error?.code == .invalidSignature)
        #expect(error.map { Self.leaksNothing($0, of: forged) } == true)
    }

    @Test func malformedCompactSerializationsAreInvalidJWTs() throws {
        let parts = F.rfc7515ES256.split(separator: ".").map(String.init)
        let hostile = [
            "\(parts[0]).\(parts[1])",
            "\(parts[0]).\(parts[1]).\(parts[2]).\(parts[2])",
            "\(parts[0]).\(parts[1]).\(parts[2])==",
            "\(parts[0])=.\(parts[1]).\(parts[2])",
            "\(parts[0]).\(parts[1]).\(parts[2].replacingOccurrences(of: "-", with: "+"))",
            "\(F.b64(#"["alg","ES256"]"#)).\(parts[1]).\(parts[2])",
            "\(F.b64("not json")).\(parts[1]).\(parts[2])",
            "\(F.b64(#"{"alg":"ES256","crit":["exp"],"exp":1}"#)).\(parts[1]).\(parts[2])",
            "\(F.b64(#"{"alg":256}"#)).\(parts[1]).\(parts[2])",
            "\(F.b64(#"{"typ":"JWT"}"#)).\(parts[1]).\(parts[2])",
            "\(F.b64(#"{"alg":"ES256","kid":7}"#)).\(parts[1]).\(parts[2])",
            "A.\(parts[1]).\(parts[2])",
            "",
        ]
        for text in hostile {
            let error = F.error { _ = try CompactJWS(text) }
            #expect(error?.code == .invalidJWT, "\(text)")
            #expect(error.map { Self.leaksNothing($0, of: text) } == true)
        }
    }

    @Test func aTokenOverTheSizeLimitIsRefusedBeforeParsing() throws {
        let huge = F.rfc7515ES256 + String(repeating: "A", count: 64 * 1024)
        #expect(F.error { _ = try CompactJWS(huge) }?.code == .invalidJWT)
        #expect(F.error { _ = try CompactJWS(F.rfc7515ES256, maxSize: 100) }?.code == .invalidJWT)
    }

    @Test func aPayloadThatIsNotAnObjectIsAnInvalidJWTWhenAskedForClaims() throws {
        let jws = try CompactJWS(F.rfc8037EdDSA)
        #expect(F.error { _ = try jws.payloadObject() }?.code == .invalidJWT)
    }

    @Test func strictBase64URLDecoding() {
        #expect(Base64URL.decode("AQAB") == [1, 0, 1])
        #expect(Base64URL.decode("AQA") == [1, 0])
        #expect(Base64URL.decode("AQ") == [1])
        #expect(Base64URL.decode("") == [])
        #expect(Base64URL.decode("A") == nil)
        #expect(Base64URL.decode("AQ==") == nil)
        #expect(Base64URL.decode("AR") == nil)
        #expect(Base64URL.decode("a+b/") == nil)
        #expect(Base64URL.decode("AQ B") == nil)
        let bytes = (0..<300).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        for count in 0..<20 {
            #expect(Base64URL.decode(Base64URL.encode(bytes.prefix(count))) == Array(bytes.prefix(count)))
        }
    }

    /// Whether the error's text holds no part of the token.
    static func leaksNothing(_ error: OAuth2Error, of token: String) -> Bool {
        let text = "\(error) \(error.errorDescription ?? "")"
        return token.split(separator: ".").allSatisfy { $0.count < 6 || !text.contains($0) }
    }
}
