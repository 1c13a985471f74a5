import Crypto
import Foundation
import _CryptoExtras
@testable import OAuth2

/// Keys, vectors and token surgery for the JOSE tests.
enum JOSEFixtures {
    /// RFC 7515 Appendix A.2–A.3's payload, with its CRLFs.
    static let rfcPayload = "eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS9pc19yb290Ijp0cnVlfQ"

    /// RFC 7515 Appendix A.2: the RS256 JWS and its key (2048 bits).
    static let rfc7515RS256 =
        "eyJhbGciOiJSUzI1NiJ9.\(rfcPayload)."
        + "cC4hiUPoj9Eetdgtv3hF80EGrhuB__dzERat0XF9g2VtQgr9PJbu3XOiZj5RZmh7AAuHIm4Bh-0Qc_lF5YKt_O8W2Fp5jujGbds9uJdbF9CUAr7t1dnZcAcQjbKBYNX4"
        + "BAynRFdiuB--f_nZLgrnbyTyWzO75vRK5h6xBArLIARNPvkSjtQBMHlb1L07Qe7K0GarZRmB_eSN9383LcOLn6_dO--xi12jzDwusC-eOkHWEsqtFZESc6BfI7noOPqv"
        + "hJ1phCnvWh6IeYI2w9QOYEUipUTI8np6LbgGY9Fs98rqVt5AXLIhWkWywlVmtVrBp0igcN_IoypGlUPQGe77Rw"
    static let rfc7515RSAModulus =
        "ofgWCuLjybRlzo0tZWJjNiuSfb4p4fAkd_wWJcyQoTbji9k0l8W26mPddxHmfHQp-Vaw-4qPCJrcS2mJPMEzP1Pt0Bm4d4QlL-yRT-SFd2lZS-pCgNMs"
        + "D1W_YpRPEwOWvG6b32690r2jZ47soMZo9wGzjb_7OMg0LOL-bSf63kpaSHSXndS5z5rexMdbBYUsLA9e-KXBdQOS-UTo7WTBEMa2R2CapHg665xsmtdV"
        + "MTBQY4uDZlxvb3qCo5ZwKh9kG4LT6_I5IhlJH7aGhyxXFvUK-DWNmoudF8NAco9_h9iaGNj8q2ethFkMLs91kzk2PAcDTW9gb54h4FRWyuXpoQ"
    /// The A.2 key's private exponent, which a careless JWKS could publish.
    static let rfc7515RSAPrivateExponent =
        "Eq5xpGnNCivDflJsRQBXHx1hdR1k6Ulwe2JZD50LpXyWPEAeP88vLNO97IjlA7_GQ5sLKMgvfTeXZx9SE-7YwVol2NXOoAJe46sui395IW_GO-pWJ1O0BkTGoVEn2bKVRUCgu-GjBVaYLU6f3l9kJfFNS3E0QbVdxzubSu3Mkqzjkn439X0M_V51gfpRLI9JYanrC4D4qAdGcopV_0ZHHzQlBjudU2QvXt4ehNYTCBr6XCLQUShb1juUO1ZdiYoFaFQT5Tw8bGUl_x_jTj3ccPDVZFD9pIuhLhBOneufuBiB4cS98l2SR_RQyGWSeWjnczT0QU91p1DhOVRuOopznQ"

    /// RFC 7515 Appendix A.3: the ES256 JWS and its key.
    static let rfc7515ES256 =
        "eyJhbGciOiJFUzI1NiJ9.\(rfcPayload).DtEhU3ljbEg8L38VWAfUAqOyKAM6-Xx-F4GawxaepmXFCgfTjDxw5djxLa8ISlSApmWQxfKTUJqPP3-Kg6NU1Q"
    static let rfc7515ECX = "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU"
    static let rfc7515ECY = "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"

    /// RFC 8037 Appendix A.1 (the private key, hex of `d`), A.2 (public `x`) and A.4 (the EdDSA JWS).
    static let rfc8037Seed = "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60"
    static let rfc8037X = "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"
    static let rfc8037EdDSA =
        "eyJhbGciOiJFZERTQSJ9.RXhhbXBsZSBvZiBFZDI1NTE5IHNpZ25pbmc."
        + "hgyY0il_MGCjP0JzlnLWG1PPOt7-09PGcvMg3AIbQR6dWbhijcNR4ki4iylGjg5BhVsPt9g7sVvpAr_MuM0KAg"

    /// Test-only EC keys in SEC1 PEM (`EC PRIVATE KEY`), as `openssl ecparam -genkey -noout` writes them.
    static let sec1P256 = """
        -----BEGIN EC PRIVATE KEY-----
        MHcCAQEEIMCCGEZBUMFgUR+YTjzmIGlFkuUqSSqULvYyE7t8mCPxoAoGCCqGSM49
        AwEHoUQDQgAE4Ey0jq7lQSpimk01WGB5zte+2cTjAC0QxSqM09OBgf+6XFCNGcCU
        uVrQISY3OEAcLwHeGP+rICRc74KL6BJGhQ==
        -----END EC PRIVATE KEY-----
        """
    static let sec1P384 = """
        -----BEGIN EC PRIVATE KEY-----
        MIGkAgEBBDBGsHy8SzPjV71pe8mG+VLFVLBXu/v/hUeNc1l6XQ/HcJLzfK21hasd
        P/NBUf6J52WgBwYFK4EEACKhZANiAARhdv9cupE4KQUU1rvzI2iZ/7DXi9CH90TH
        Fx7bjoyicAO8eUO80snheuo4vImhujz1E12EWCY7SULbvIB9k3q7B7K1+qS9jYjx
        y/twnMoRbEV5tcCuK8mhTtgoafVHusk=
        -----END EC PRIVATE KEY-----
        """

    static var rfcRSAJWK: [String: JSONValue] {
        ["kty": .string("RSA"), "n": .string(rfc7515RSAModulus), "e": .string("AQAB")]
    }

    static var rfcECJWK: [String: JSONValue] {
        ["kty": .string("EC"), "crv": .string("P-256"), "x": .string(rfc7515ECX), "y": .string(rfc7515ECY)]
    }

    static var rfcOKPJWK: [String: JSONValue] {
        ["kty": .string("OKP"), "crv": .string("Ed25519"), "x": .string(rfc8037X)]
    }

    /// One RSA key for the whole run: generating 2048 bits is slow in a debug build.
    static let rsaKey: _RSA.Signing.PrivateKey = {
        do { return try _RSA.Signing.PrivateKey(keySize: .bits2048) } catch { fatalError("RSA key generation failed: \(error)") }
    }()

    /// Another RSA key, for a signature from the wrong key.
    static let otherRSAKey: _RSA.Signing.PrivateKey = {
        do { return try _RSA.Signing.PrivateKey(keySize: .bits2048) } catch { fatalError("RSA key generation failed: \(error)") }
    }()

    static func hex(_ text: String) -> [UInt8] {
        var bytes: [UInt8] = []
        var index = text.startIndex
        while index < text.endIndex {
            let next = text.index(index, offsetBy: 2)
            bytes.append(UInt8(text[index..<next], radix: 16) ?? 0)
            index = next
        }
        return bytes
    }

    static func b64(_ bytes: some Sequence<UInt8>) -> String { Base64URL.encode(bytes) }
    static func b64(_ text: String) -> String { Base64URL.encode(Array(text.utf8)) }

    /// A key set of one JWK.
    static func keySet(_ objects: [String: JSONValue]...) throws -> JSONWebKeySet {
        JSONWebKeySet(keys: try objects.map { try JSONWebKey($0) })
    }

    /// A key set from a key's public JWK.
    static func keySet(of key: JWTSigningKey) throws -> JSONWebKeySet {
        guard let jwk = key.publicJWK else { throw OAuth2Error(code: .invalidConfiguration, message: "no public JWK") }
        return try keySet(jwk)
    }

    /// The error `body` threw, when it is an OAuth2Error.
    static func error(_ body: () throws -> Void) -> OAuth2Error? {
        do {
            try body()
            return nil
        } catch let error as OAuth2Error {
            return error
        } catch {
            return nil
        }
    }

    /// A token with the given header and payload JSON texts and signature bytes.
    static func token(header: String, payload: String, signature: [UInt8]) -> String {
        "\(b64(header)).\(b64(payload)).\(b64(signature))"
    }

    /// A token signed by `key` with a header written out by hand.
    static func signed(header: String, payload: String, key: JWTSigningKey) throws -> String {
        let input = "\(b64(header)).\(b64(payload))"
        return "\(input).\(b64(try key.sign(Array(input.utf8))))"
    }
}
