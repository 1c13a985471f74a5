import Crypto
import Foundation
import Testing
import _CryptoExtras
@testable import OAuth2

@Suite struct JOSESigningTests {
    typealias F = JOSEFixtures

    static let now = Date(timeIntervalSince1970: 1_700_000_000.75)

    static func ecKey() throws -> JWTSigningKey {
        try JWTSigningKey.ecdsa(pem: P256.Signing.PrivateKey().pemRepresentation, keyID: "client-key")
    }

    @Test func anAssertionCarriesTheClaimsOfRFC7523() throws {
        let key = try Self.ecKey()
        let assertion = try JWTAssertion.make(
            issuer: "client-1", subject: "client-1", audience: "https://id.example/token", key: key, now: Self.now,
            additionalClaims: ["nonce": .string("n-1")]
        )
        let jws = try CompactJWS(assertion.value)
        #expect(jws.header == ["alg": .string("ES256"), "typ": .string("JWT"), "kid": .string("client-key")])
        let claims = try jws.payloadObject()
        #expect(claims["iss"] == .string("client-1"))
        #expect(claims["sub"] == .string("client-1"))
        #expect(claims["aud"] == .string("https://id.example/token"))
        #expect(claims["iat"] == .number(1_700_000_000))
        #expect(claims["exp"] == .number(1_700_000_060))
        #expect(claims["nonce"] == .string("n-1"))
        #expect(claims.count == 7)
        let jti = try #require(claims["jti"]?.stringValue)
        #expect(Base64URL.decode(jti)?.count == 16)
        let payloadText = String(decoding: jws.payload, as: UTF8.self)
        #expect(payloadText.contains(#""iat":1700000000,"#))
        #expect(payloadText.contains(#""exp":1700000060,"#))
        #expect(payloadText.contains(#""aud":"https://id.example/token""#))
        try jws.verify(with: F.keySet(of: key), allowedAlgorithms: [.es256])
    }

    @Test func eachAssertionHasItsOwnJTI() throws {
        let key = try JWTSigningKey.hmac(.opaque(String(repeating: "k", count: 32)))
        var seen: Set<String> = []
        for _ in 0..<20 {
            let token = try JWTAssertion.make(issuer: "c", subject: "c", audience: "a", key: key, now: Self.now)
            let jti = try #require(try CompactJWS(token.value).payloadObject()["jti"]?.stringValue)
            seen.insert(jti)
        }
        #expect(seen.count == 20)
    }

    @Test func theLifetimeSetsExpAndMustBePositive() throws {
        let key = try Self.ecKey()
        let token = try JWTAssertion.make(issuer: "c", subject: "c", audience: "a", key: key, lifetime: .seconds(300), now: Self.now)
        let claims = try CompactJWS(token.value).payloadObject()
        guard case .number(let iat)? = claims["iat"], case .number(let exp)? = claims["exp"] else {
            Issue.record("iat or exp is not a number")
            return
        }
        #expect(exp - iat == 300)
        for lifetime in [Duration.zero, .seconds(-5)] {
            let error = F.error { _ = try JWTAssertion.make(issuer: "c", subject: "c", audience: "a", key: key, lifetime: lifetime) }
            #expect(error?.code == .invalidConfiguration)
        }
    }

    @Test func additionalClaimsMayNotReplaceTheReservedOnes() throws {
        let key = try Self.ecKey()
        for name in ["iss", "sub", "aud", "jti", "iat", "exp"] {
            let error = F.error {
                _ = try JWTAssertion.make(issuer: "c", subject: "c", audience: "a", key: key, additionalClaims: [name: .string("x")])
            }
            #expect(error?.code == .invalidConfiguration)
            #expect(error?.message.contains(name) == true)
        }
    }

    @Test func hmacKeysShorterThanTheHashAreRefused() throws {
        #expect(F.error { _ = try JWTSigningKey.hmac(.opaque("short")) }?.code == .invalidConfiguration)
        #expect(F.error { _ = try JWTSigningKey.hmac(.opaque(String(repeating: "k", count: 31))) }?.code == .invalidConfiguration)
        #expect(
            F.error { _ = try JWTSigningKey.hmac(.opaque(String(repeating: "k", count: 48)), algorithm: .hs512) }?.code
                == .invalidConfiguration)
        #expect(
            F.error { _ = try JWTSigningKey.hmac(.opaque(String(repeating: "k", count: 64)), algorithm: .rs256) }?.code
                == .invalidConfiguration)
        let key = try JWTSigningKey.hmac(.opaque(String(repeating: "k", count: 48)), algorithm: .hs384)
        #expect(key.algorithm == .hs384)
        #expect(key.algorithm.isSymmetric)
    }

    @Test func anHMACTokenIsTheMACOfItsSigningInputAndDeterministic() throws {
        let secret = String(repeating: "0123456789abcdef", count: 2)
        let key = try JWTSigningKey.hmac(.opaque(secret))
        let first = try JWT.sign(claims: ["b": .number(1), "a": .string("x/y")], key: key)
        let second = try JWT.sign(claims: ["a": .string("x/y"), "b": .number(1)], key: key)
        #expect(first == second)
        let parts = first.value.split(separator: ".").map(String.init)
        #expect(Base64URL.decode(parts[0]).map { String(decoding: $0, as: UTF8.self) } == #"{"alg":"HS256","typ":"JWT"}"#)
        #expect(Base64URL.decode(parts[1]).map { String(decoding: $0, as: UTF8.self) } == #"{"a":"x/y","b":1}"#)
        let mac = HMAC<SHA256>.authenticationCode(for: Array("\(parts[0]).\(parts[1])".utf8), using: SymmetricKey(data: Array(secret.utf8)))
        #expect(parts[2] == F.b64(Array(mac)))
        // A client's own HMAC token is never accepted where a provider's signature is checked.
        let jws = try CompactJWS(first.value)
        #expect(F.error { try jws.verify(with: JSONWebKeySet(keys: []), allowedAlgorithms: [.hs256]) }?.code == .unsupportedAlgorithm)
    }

    @Test func theTypeHeaderCanBeChangedOrLeftOut() throws {
        let key = try Self.ecKey()
        #expect(try CompactJWS(JWT.sign(claims: [:], key: key, type: nil).value).header["typ"] == nil)
        #expect(try CompactJWS(JWT.sign(claims: [:], key: key, type: "dpop+jwt").value).header["typ"] == .string("dpop+jwt"))
    }

    @Test func theSerializationWritesNumbersAndStringsPlainly() throws {
        func text(_ value: JSONValue) throws -> String { String(decoding: try JOSEJSON.serialize(value), as: UTF8.self) }
        #expect(try text(.number(1_700_000_000)) == "1700000000")
        #expect(try text(.number(-3)) == "-3")
        #expect(try text(.number(0.5)) == "0.5")
        #expect(try text(.string("a\"b\\c\n\u{1}é/")) == #""a\"b\\c\n\u0001é/""#)
        #expect(try text(.object(["b": .null, "a": .array([.bool(true), .bool(false)])])) == #"{"a":[true,false],"b":null}"#)
        #expect(F.error { _ = try JOSEJSON.serialize(.number(.infinity)) }?.code == .invalidConfiguration)
        // What JOSE writes, the library's own parser reads back as the same value.
        let value: JSONValue = .object(["x": .number(1e300), "y": .number(-0.000001), "z": .string("\u{0}\u{7f}")])
        #expect(try JSONParser.parse(Data(try JOSEJSON.serialize(value))) == value)
    }

    @Test func badPEMsAreConfigurationErrorsThatDoNotEchoThePEM() throws {
        let ecPEM = P256.Signing.PrivateKey().pemRepresentation
        let rsaPEM = F.rsaKey.pemRepresentation
        let cases: [(String, () throws -> Void)] = [
            (ecPEM, { _ = try JWTSigningKey.rsa(pem: ecPEM) }),
            (rsaPEM, { _ = try JWTSigningKey.ecdsa(pem: rsaPEM) }),
            ("not a pem", { _ = try JWTSigningKey.rsa(pem: "not a pem") }),
            (rsaPEM, { _ = try JWTSigningKey.rsa(pem: rsaPEM, algorithm: .es256) }),
            ("", { _ = try JWTSigningKey.ed25519(rawRepresentation: [UInt8](repeating: 1, count: 31)) }),
        ]
        for (pem, body) in cases {
            let error = F.error(body)
            #expect(error?.code == .invalidConfiguration)
            let lines = pem.split(separator: "\n").filter { !$0.hasPrefix("-----") }
            #expect(lines.allSatisfy { !(error?.message.contains($0) ?? false) })
        }
    }

    @Test func aSigningKeyShowsOnlyItsAlgorithmAndKid() throws {
        let rsaPEM = F.rsaKey.pemRepresentation
        let secret = "client-secret-that-is-long-enough-for-hs256"
        let keys = [
            try JWTSigningKey.rsa(pem: rsaPEM, keyID: "kid-1"),
            try JWTSigningKey.ecdsa(pem: P256.Signing.PrivateKey().pemRepresentation),
            try JWTSigningKey.ed25519(rawRepresentation: F.hex(F.rfc8037Seed)),
            try JWTSigningKey.hmac(.opaque(secret)),
        ]
        let secrets =
            rsaPEM.split(separator: "\n").filter { !$0.hasPrefix("-----") }.map(String.init)
            + [secret, F.b64(F.hex(F.rfc8037Seed)), F.rfc8037Seed, "nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A"]
        for key in keys {
            var dumped = ""
            dump(key, to: &dumped)
            let shown = [String(describing: key), String(reflecting: key), dumped, "\(key)"]
            for text in shown {
                #expect(text.contains(key.algorithm.rawValue))
                #expect(secrets.allSatisfy { !text.contains($0) }, "\(text)")
                #expect(!text.contains("material"))
            }
        }
        #expect(String(describing: keys[0]) == "JWTSigningKey(RS256, kid: kid-1)")
    }

    @Test func theSignedTokenIsASecret() throws {
        let token = try JWT.sign(claims: ["sub": .string("alice")], key: Self.ecKey())
        #expect(!"\(token)".contains(token.value))
        #expect(!String(reflecting: token).contains(token.value))
    }
}
