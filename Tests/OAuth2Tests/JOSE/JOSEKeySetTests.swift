import Crypto
import Foundation
import Testing
import _CryptoExtras
@testable import OAuth2

@Suite struct JOSEKeySetTests {
    typealias F = JOSEFixtures

    @Test func garbageIsAnInvalidKeySet() {
        let bodies = ["not json", "[]", #"{"nokeys":[]}"#, #"{"keys":{}}"#, #"{"keys":"AQAB"}"#, #""keys""#, ""]
        for body in bodies {
            #expect(F.error { _ = try JSONWebKeySet.parse(Data(body.utf8)) }?.code == .invalidJWKS, "\(body)")
        }
        let big = Data(#"{"keys":[]}"#.utf8) + Data(repeating: 0x20, count: 100)
        #expect(F.error { _ = try JSONWebKeySet.parse(big, maxSize: 64) }?.code == .invalidJWKS)
        #expect((try? JSONWebKeySet.parse(Data(#"{"keys":[]}"#.utf8)))?.keys.isEmpty == true)
    }

    @Test func badKeysAreSkippedAndTheGoodOneStillVerifies() throws {
        let body = """
            {"keys": [
              {"kty": "RSA", "kid": "bad-n", "n": "!!", "e": "AQAB"},
              {"kty": "oct", "kid": "hmac", "k": "AyM1SysPpbyDfgZld3umj1qzKObwVMkoqQ-EstJQLr_T-1qS0gZH75aKtMN3Yj0iPS4hcgUuTwjAzZr1Z9CAow"},
              {"kty": "EC", "kid": "short", "crv": "P-256", "x": "AQAB", "y": "AQAB"},
              {"kty": "EC", "kid": "secp256k1", "crv": "secp256k1", "x": "\(F.rfc7515ECX)", "y": "\(F.rfc7515ECY)"},
              {"kty": "OKP", "kid": "x25519", "crv": "X25519", "x": "\(F.rfc8037X)"},
              {"kty": "EC", "kid": "off-curve", "crv": "P-256", "x": "\(F.rfc7515ECX)", "y": "\(F.rfc7515ECX)"},
              {"kid": "no-kty"},
              "not an object",
              {"kty": "EC", "kid": "good", "crv": "P-256", "x": "\(F.rfc7515ECX)", "y": "\(F.rfc7515ECY)", "use": "sig"}
            ]}
            """
        let set = try JSONWebKeySet.parse(Data(body.utf8))
        #expect(set.keys.map(\.keyID) == ["good"])
        let parts = F.rfc7515ES256.split(separator: ".").map(String.init)
        let header = F.b64(#"{"alg":"ES256","kid":"good"}"#)
        // The RFC signature is over its own header; verify it through the kid-less token and the keyed set.
        let jws = try CompactJWS(F.rfc7515ES256)
        #expect(try jws.verify(with: set, allowedAlgorithms: [.es256]).keyID == "good")
        let renamed = try CompactJWS("\(header).\(parts[1]).\(parts[2])")
        #expect(F.error { try renamed.verify(with: set, allowedAlgorithms: [.es256]) }?.code == .invalidSignature)
    }

    @Test func anRSAKeyUnder2048BitsIsSkipped() throws {
        let jwk = #"{"kty":"RSA","kid":"small","n":"\#(F.rsa1024Modulus)","e":"AQAB"}"#
        #expect(
            F.error { _ = try JSONWebKey(["kty": .string("RSA"), "n": .string(F.rsa1024Modulus), "e": .string("AQAB")]) }?.code
                == .invalidJWKS)
        let set = try JSONWebKeySet.parse(Data(#"{"keys":[\#(jwk)]}"#.utf8))
        #expect(set.keys.isEmpty)
    }

    @Test func aKeyPublishedWithItsPrivateExponentIsReadAsPublicOnly() throws {
        var object = F.rfcRSAJWK
        object["d"] = .string(F.rfc7515RSAPrivateExponent)
        object["kid"] = .string("leaky")
        let key = try JSONWebKey(object)
        var dumped = ""
        dump(key, to: &dumped)
        let fragment = String(F.rfc7515RSAPrivateExponent.prefix(24))
        #expect(!dumped.contains(fragment))
        #expect(!"\(key)".contains(fragment))
        let privateBytes = try #require(Base64URL.decode(F.rfc7515RSAPrivateExponent))
        if case .rsa(let modulus, let exponent) = key.material {
            #expect(modulus != privateBytes && exponent != privateBytes)
        }
        #expect(key == (try JSONWebKey(F.rfcRSAJWK.merging(["kid": .string("leaky")]) { $1 })))
        try CompactJWS(F.rfc7515RS256).verify(with: JSONWebKeySet(keys: [key]), allowedAlgorithms: [.rs256])
    }

    @Test func candidatesFollowTheKidWhenThereIsOne() throws {
        let a = try JSONWebKey(F.rfcECJWK.merging(["kid": .string("a")]) { $1 })
        let b = try JSONWebKey(F.rfcECJWK.merging(["kid": .string("b")]) { $1 })
        let rsa = try JSONWebKey(F.rfcRSAJWK.merging(["kid": .string("a")]) { $1 })
        let set = JSONWebKeySet(keys: [a, b, rsa])
        #expect(set.candidates(keyID: "a", algorithm: .es256) == [a])
        #expect(set.candidates(keyID: nil, algorithm: .es256) == [a, b])
        #expect(set.candidates(keyID: "a", algorithm: .rs256) == [rsa])
        #expect(set.candidates(keyID: "c", algorithm: .es256).isEmpty)
        #expect(set.candidates(keyID: nil, algorithm: .es384).isEmpty)
    }

    @Test func keysVerifyOnlyTheAlgorithmsOfTheirTypeAndCurve() throws {
        let ec = try JSONWebKey(F.rfcECJWK)
        let rsa = try JSONWebKey(F.rfcRSAJWK)
        let okp = try JSONWebKey(F.rfcOKPJWK)
        #expect(ec.canVerify(.es256) && !ec.canVerify(.es384) && !ec.canVerify(.rs256) && !ec.canVerify(.hs256))
        #expect(rsa.canVerify(.rs256) && rsa.canVerify(.ps512) && !rsa.canVerify(.es256) && !rsa.canVerify(.hs256))
        #expect(okp.canVerify(.edDSA) && !okp.canVerify(.es256))
        #expect(F.error { _ = try JSONWebKey(["kty": .string("oct"), "k": .string("AQAB")]) }?.code == .invalidJWKS)
        #expect(F.error { _ = try JSONWebKey(F.rfcECJWK.merging(["kid": .number(1)]) { $1 }) }?.code == .invalidJWKS)
    }
}
