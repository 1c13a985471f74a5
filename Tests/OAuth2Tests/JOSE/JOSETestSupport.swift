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

    /// One RSA key for the whole run, fixed: generating 2048 bits takes
    /// seconds in a debug build and far longer under ThreadSanitizer, and a
    /// test that waits on a lazily generated key holds a thread of the
    /// cooperative pool the whole time. A test fixture, not a secret.
    static let rsaKey = fixedRSAKey(rsaKeyPEM)

    /// Another fixed RSA key, for a signature from the wrong key.
    static let otherRSAKey = fixedRSAKey(otherRSAKeyPEM)

    /// The modulus (base64url) of a 1024-bit RSA key: too short to be accepted.
    static let rsa1024Modulus =
        "rEvfsHz2lAzLnuDODfGjzmSWLKZwutIVVY09TZBy7n8Nw1SkkzJDs3eQQs-pa0VWTj3c4CPMxZ9gkcMHUUi-8xYUdGIy-Jv4CaRFdy-Ed2rC5U3TCKloStjdLa5sxH1cVNQoNNtaa1UH8hx54kkj8_aBsRUoTBQgAjJzRrEOj0M"

    private static func fixedRSAKey(_ pem: String) -> _RSA.Signing.PrivateKey {
        do { return try _RSA.Signing.PrivateKey(pemRepresentation: pem) } catch {
            fatalError("the fixed RSA test key does not parse: \(error)")
        }
    }

    private static let rsaKeyPEM = """
        -----BEGIN RSA PRIVATE KEY-----
        MIIEpQIBAAKCAQEAx69uDHlseDPAYvnsJD0wGEOy585cvhG+3+eU/OXFqiMM9Y7Y
        AE4X67yNsrWiOhnpjFM96p+/cFyvDgXqPGnB0qUlG75kFPVkiGKbmdR2uLQEvCfl
        0UKhK3Zrt4dbcnTHzH4OAqlTsRYp2CwT3OAyX1NmYRKX+S9qdUUHgwltr9+w1jYf
        /RPlf6gDC24nvIKTM/uAw22QfW0GX0TMakGYBn6+V2nnC3yY5cXTTrRAj4VK4hCJ
        Wp1UKMOROc0tEKHJmaCRpokIsC7sZKa5Gc2lTiEfMHTr8a3eSk3GlMSGRMqwXoRA
        kMRJhv8SPZkVbxgn2X4B2M7RdLO5BJqDwHxiUwIDAQABAoIBABSXTHvQ0ZSbkY0j
        RGyAOsNlx78Lkpiu78Xa9YwWjYl7z8xKjI+Lff/7E4mIHVBsd57Wvp3BF1aY2BxU
        E9Fi/m+gQ/FWcq+Olm1R7cWxGQT22z4jxxkLC9+VeIoWVSG6VRgLL5qqp0ytgmce
        NHYkUE1wJjCAYFd7wjiRg7LJeBwYgFs/ulg7uAh+HTKc2pqAQjH3qtVrspOSyZDj
        p7jABLTbpufCDpgXvQFnSV6bA/4IvkRDUfFHI5wlDzUiI2O791C7dYkCq3c+HDEk
        +MzMbCEL/wQESMKJjn0bVW12nXTLTNNrAQkn24UlYUIbx5RGxdXeWSCiYczJrT1E
        zlIM9UECgYEA5XSTvjwwtk7Qma93404PKN4IoCm68cptvnhMNKnrOM/vPJn0wCbG
        pt6QuGLMcnd1aCF3ggqCv+b3FgcBytvgZB0FigAz9U93jxCSwGdEtBeQr5jDDO7I
        +9TKpQw/kik33C4REhbJGpWKlNDo2wCuXE3UnT21jfLJ5XbxNkwcPXECgYEA3sky
        pfDXqI24XGBaroXUIxxf8cHU3U5oxjW3pDyY1fmO/EUJBrBYt2u7jbSCQuEbUH5S
        VbQ4ZU/KFNYpiTp2RsbStHH5FR+nGN4l7d9DlbZyIPN4HGxXxttEdJ0zZhODnXY7
        tN9RJdBQG9zG5Jc8VWiASs891x+YE/22Mpo1SgMCgYEArCQ0fyDK7srcRqBUkixK
        xT8mO3pzLNjQUngPu+bKeJnPAqkB7HJq0F/jNOGyPiIO6+tHrEDUbMILFvR0zMr+
        Yj0/nZOfZ2eR67vkTQJskauoOYSiuH4gPIYc7Yvt2Wqg5MeOuQJtJ0uPZyv/teWh
        6c/eNYVJQtAl1cfRGQoqmZECgYEAg0cXu0SyL7Zi/rwgc1qU6KOdvb20Czxa7QFW
        V0cF4ICPywN7EB/2Bw9Kk3PclkBDcikdpzbtTHW55JFWJHD4pTgfjQjj95iRREwT
        GZpIHv5FPjl5e3Y0Ow+VxQmk8e9pzO2QvUIidR/NNL3hzW14tfNANdTs4cjSOmV0
        aVkJMbUCgYEApyfekS16P4YqyiKpPqL1LlaMMHeDnx5QLEl90Dcpd0tAS2QuFqI1
        0UNOye/WM5rKq2Q6l/GIm0iYSGO+9ea8OkOIZADvkYJYxHBxr08vXQzBky2gJ+GP
        gsm7ijc+G8DTd/WNDM8+lLEBaP8tCby0d22Zwznthc41ejytl+H9yZE=
        -----END RSA PRIVATE KEY-----
        """

    private static let otherRSAKeyPEM = """
        -----BEGIN RSA PRIVATE KEY-----
        MIIEogIBAAKCAQEA9+KiW4sVwPmXKnQMuzvObwr2Jgggd458dXMlOZS0IgZ5x14u
        TTeC9kFKCBFfOq95lAw+cGKi4Drtch6Di4KFXhoi2y+yaQ4MBYw2dqDEVpa2KOx4
        DgMekdYTjDeULbZ4e6opSFYhIXLiqYlMMKonfNpobUfdTJtcL373fENMPJldbRIw
        XDmeUGaL94bF8Rm3sKOpVyVY0ijk0Nb8VAjFUkC6CVeSXb7wcwdDsGbIOJ/1MlYp
        yAP+KUqyMO91xR4xBtLCkdaUaqIQnRDnE7+cCVeQ3uhw0tEejcdDz8BB34yR1J2s
        ntM7UrxPDeMvDz/hnMryhiDyYqQVHwXiBIBdYQIDAQABAoIBAAINX2+IG88Zi1mD
        xpspi2yJ25GjPfkdmmNixKXd7RCJ6ftNyOkCIi4JRLo3nzz5G9Lmcenv2Xs+jxqs
        TMuGoMEyfzhD8tZUzHmFgrtr/VavaMNrcyDdNMUkQSmP8QHPGzCjXah4sIe72fnj
        mQy8UeXlJIKGppgTTfm504WMRJYkPjyZ5v/uWvUzGhAzvTyDiQuxHhNxqD8dwWYK
        yR0NXy2JUbIybZeAB5rf18C2b9Ktlk3WTE7U3wZDzWahNByCEM9azvtHu9zYLuyT
        lXm86HionHSRZAVXhSpfmw8OFKkdNCULC06/S54IGv+mdfq2pPTb8wPZcV+sPPZx
        K/bHEZkCgYEA/U4a6rGd750H/IkhKbFgTyHM1RDY/AOeDcDfpXiuJmNcdMErj6N2
        gNCUnGuHQloS8CzpQbiU0Ep4/iyO8FHUEdlxpd27cbSmmcJ75z6yHU+ynShT8lWu
        SQhjzs/uPXZIjwaVnRvdP2/7U89Le5/NFfctFRlhhLGgcep/k60re7kCgYEA+oXE
        kBViCesYsVABC48+Fc1DJXwGJ1n0G6Q5TJtgLJIgdnjowKtPRrDAHH7dpqkGjc3s
        GdBO49DzMwRdgyWaMR9fYIzX4c3TNh0DhSbjVEiSg2kaRFAiCB1u636/zzUUunDd
        eAQraWnfm8+RVwQHjZs0vZSt6KR+6AWgsR1n0ukCgYBpBopohw6J/B0Em0Lxy4a4
        KLaKHTsqesF8yFyyejAS4J3EFxfdrZQD4vfLR1ZEr54skSKBymuBVW+HS6hUgkkg
        wXy6ng4LHjD5jcbb4YXuW04elUsBLn9d7qmbZWFNgI6jJsK/6n64v9CANnIApwhc
        tCiwF970KsXwlZ8h9uoRmQKBgGBjHTiOcZT9VhfKf0xyRWHgAqimajuzuV71NXKL
        CVq8si7C4FJY1vyMvq14BlG8EKB4jRF1exTd7ORBFrWBvyyNNIYSSnE/XrcgPJ17
        U9W2wmA7DPchmaZjpKyIrMXNV3dQO3WUrRs2t+jb2MCQ9VL/VzBlxu+OcqFUoPnk
        JXEZAoGATqUH04di3cMw6O7UAKtjWaR2EFUpvx9iZ+oNo7B6Spo6GSG7I80HnVl6
        33b9OO/ZMbLm/s5n2TFDiR4Wk1z/tZfB/1txr+ktO8vYUHVq390qMZ8xToIsBmjd
        Kwr4AnJh0/4fx/6XJtDDIiOuqxdiGL71/b0Jw2I5ImqL9QQSiPw=
        -----END RSA PRIVATE KEY-----
        """

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
