import Foundation
import OAuth2

/// The JOSE parsers on hostile input: compact JWS (an ID token as a provider
/// would send it) and JWKS documents (a provider's key set).
///
/// The first byte picks the parser; the rest is the input. Checked: no
/// crash; a JWS never verifies against a key set whose private key no one has
/// (the fuzzer cannot forge, so a success is a bypass such as `none` or an
/// algorithm confusion); every failure is one of the JOSE codes; no error
/// quotes the token's signature or payload; every key a JWKS yields can verify
/// some algorithm (unusable keys are skipped, never kept).
enum JOSETarget {
    /// The key set: an RFC 7515 P-256 key and the RFC 8037 Ed25519 key.
    ///
    /// Parsed per input rather than kept in a static: LeakSanitizer cannot see
    /// pointers Swift stores in an enum payload's spare bits, and reported the
    /// static's key bytes as leaked.
    private static func keySet() -> JSONWebKeySet? {
        try? JSONWebKeySet.parse(Data(keySetText.utf8))
    }
    private static let keySetText = """
        {"keys": [
          {"kty": "EC", "crv": "P-256", "kid": "k1", "use": "sig",
           "x": "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU", "y": "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"},
          {"kty": "OKP", "crv": "Ed25519", "kid": "k2", "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}
        ]}
        """
    private static let allowed: Set<JWSAlgorithm> = [.rs256, .ps256, .es256, .es384, .edDSA, .hs256]
    private static let expectedCodes: Set<OAuth2Error.Code> = [.invalidJWT, .unsupportedAlgorithm, .invalidSignature, .unknownSigningKey]
    /// The RFC tokens this key set verifies (its keys' private halves are published in RFC 7515 and RFC 8037).
    private static let knownGood: Set<String> = [
        "eyJhbGciOiJFUzI1NiJ9.eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS9pc19yb290Ijp0cnVlfQ.DtEhU3ljbEg8L38VWAfUAqOyKAM6-Xx-F4GawxaepmXFCgfTjDxw5djxLa8ISlSApmWQxfKTUJqPP3-Kg6NU1Q",
        "eyJhbGciOiJFZERTQSJ9.RXhhbXBsZSBvZiBFZDI1NTE5IHNpZ25pbmc.hgyY0il_MGCjP0JzlnLWG1PPOt7-09PGcvMg3AIbQR6dWbhijcNR4ki4iylGjg5BhVsPt9g7sVvpAr_MuM0KAg",
    ]

    static func run(_ bytes: UnsafeRawBufferPointer) {
        guard let selector = bytes.first else { return }
        let input = Data(bytes.dropFirst())
        if selector & 0x80 == 0 {
            jws(String(decoding: input, as: UTF8.self))
        } else {
            jwks(input)
        }
    }

    private static func jws(_ text: String) {
        guard let keySet = keySet() else { violation("the target's key set does not parse") }
        let parts = text.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        do throws(OAuth2Error) {
            let jws = try CompactJWS(text)
            if let claims = try? jws.payloadObject() {
                _ = try? IDToken(claims: claims)
                // A back-channel logout token's claims (OpenID Connect Back-Channel Logout §2.4).
                do throws(OAuth2Error) { _ = try LogoutToken(claims: claims) } catch {
                    guard error.code == .invalidLogoutToken else { violation("a logout token's claims failed with \(error.code)") }
                }
            }
            try jws.verify(with: keySet, allowedAlgorithms: allowed)
            guard knownGood.contains(text) else { violation("a JWS verified against a key no one holds (alg \(jws.algorithm))") }
        } catch {
            guard expectedCodes.contains(error.code) else { violation("a JWS failed with \(error.code)") }
            let message = "\(error) \(error.message)"
            // Only parts a message could quote verbatim (messages drop control
            // characters), compared in Swift: Foundation's contains(_:) stops at
            // a NUL and would find "l\0\0…" in any message with an "l".
            for part in parts.dropFirst()
            where part.count >= 12 && part.utf8.allSatisfy({ (0x20...0x7E).contains($0) }) && message.firstRange(of: part) != nil {
                violation("a JWS error (\(error.code)) quotes the token's payload or signature")
            }
        }
    }

    private static func jwks(_ body: Data) {
        do throws(OAuth2Error) {
            let set = try JSONWebKeySet.parse(body)
            for key in set.keys where !allowed.union([.rs384, .rs512, .ps384, .ps512, .es512]).contains(where: key.canVerify) {
                violation("a JWKS kept a key (kty \(key.keyType)) that can verify nothing")
            }
        } catch {
            guard error.code == .invalidJWKS else { violation("a JWKS failed with \(error.code)") }
        }
    }
}
