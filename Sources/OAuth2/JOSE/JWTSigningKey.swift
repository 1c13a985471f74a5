#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif
import Crypto
import _CryptoExtras

/// A key the client signs JWTs with: an RFC 7523 client assertion
/// (`private_key_jwt` with a private key, `client_secret_jwt` with the client
/// secret) or the assertion of a JWT-bearer grant.
///
/// Its `description`, `debugDescription` and `Mirror` show only the
/// algorithm and key id, never the key; errors never echo a PEM.
public struct JWTSigningKey: Sendable {
    /// The algorithm its JWTs are signed with, the header's `alg`.
    public let algorithm: JWSAlgorithm
    /// The key id the provider knows the key by, the header's `kid`, when there is one.
    public let keyID: String?
    /// The public JWK of an asymmetric key (`kty`, `n` and `e` or `crv`, `x`
    /// and `y`, `kid`, `alg`, `use` `"sig"`), to register with a provider or
    /// publish at the client's `jwks_uri`; nil for an HMAC key.
    public let publicJWK: [String: JSONValue]?
    /// The private key or the shared secret.
    private let material: Material

    private enum Material: Sendable {
        case rsa(_RSA.Signing.PrivateKey)
        case p256(P256.Signing.PrivateKey)
        case p384(P384.Signing.PrivateKey)
        case p521(P521.Signing.PrivateKey)
        case ed25519(Curve25519.Signing.PrivateKey)
        case hmac(SymmetricKey)
    }

    private init(algorithm: JWSAlgorithm, keyID: String?, publicJWK: [String: JSONValue]?, material: Material) {
        self.algorithm = algorithm
        self.keyID = keyID
        self.material = material
        guard var jwk = publicJWK else {
            self.publicJWK = nil
            return
        }
        jwk["alg"] = .string(algorithm.rawValue)
        jwk["use"] = .string("sig")
        if let keyID { jwk["kid"] = .string(keyID) }
        self.publicJWK = jwk
    }

    /// An RSA private key in PEM, PKCS#1 (`RSA PRIVATE KEY`) or PKCS#8
    /// (`PRIVATE KEY`), of 2048 bits or more, for RS256, RS384, RS512, PS256,
    /// PS384 or PS512.
    ///
    /// - Throws: ``OAuth2Error/Code/invalidConfiguration`` when the PEM is
    ///   not such a key or the algorithm is not an RSA one.
    public static func rsa(pem: String, algorithm: JWSAlgorithm = .rs256, keyID: String? = nil) throws(OAuth2Error) -> JWTSigningKey {
        guard algorithm.isRSA else {
            throw OAuth2Error(code: .invalidConfiguration, message: "an RSA key cannot sign \(algorithm.rawValue)")
        }
        let key: _RSA.Signing.PrivateKey
        let jwk: [String: JSONValue]
        do {
            key = try _RSA.Signing.PrivateKey(pemRepresentation: pem)
            let primitives = try key.publicKey.getKeyPrimitives()
            jwk = [
                "kty": .string("RSA"),
                "n": .string(Base64URL.encode(primitives.modulus)),
                "e": .string(Base64URL.encode(primitives.publicExponent)),
            ]
        } catch {
            throw OAuth2Error(code: .invalidConfiguration, message: "the PEM is not an RSA private key of 2048 bits or more")
        }
        return JWTSigningKey(algorithm: algorithm, keyID: keyID, publicJWK: jwk, material: .rsa(key))
    }

    /// An EC private key in PEM, SEC1 (`EC PRIVATE KEY`) or PKCS#8
    /// (`PRIVATE KEY`); its curve sets the algorithm: P-256 signs ES256,
    /// P-384 ES384, P-521 ES512.
    ///
    /// - Throws: ``OAuth2Error/Code/invalidConfiguration`` when the PEM is
    ///   not a private key of one of these curves.
    public static func ecdsa(pem: String, keyID: String? = nil) throws(OAuth2Error) -> JWTSigningKey {
        if let key = try? P256.Signing.PrivateKey(pemRepresentation: pem) {
            return JWTSigningKey(
                algorithm: .es256, keyID: keyID, publicJWK: ecJWK("P-256", key.publicKey.rawRepresentation), material: .p256(key))
        }
        if let key = try? P384.Signing.PrivateKey(pemRepresentation: pem) {
            return JWTSigningKey(
                algorithm: .es384, keyID: keyID, publicJWK: ecJWK("P-384", key.publicKey.rawRepresentation), material: .p384(key))
        }
        if let key = try? P521.Signing.PrivateKey(pemRepresentation: pem) {
            return JWTSigningKey(
                algorithm: .es512, keyID: keyID, publicJWK: ecJWK("P-521", key.publicKey.rawRepresentation), material: .p521(key))
        }
        throw OAuth2Error(code: .invalidConfiguration, message: "the PEM is not an EC private key of P-256, P-384 or P-521")
    }

    /// An Ed25519 private key, its 32-byte raw representation; signs EdDSA.
    ///
    /// - Throws: ``OAuth2Error/Code/invalidConfiguration`` when it is not 32 bytes.
    public static func ed25519(rawRepresentation: some ContiguousBytes, keyID: String? = nil) throws(OAuth2Error) -> JWTSigningKey {
        let key: Curve25519.Signing.PrivateKey
        do {
            key = try Curve25519.Signing.PrivateKey(rawRepresentation: rawRepresentation)
        } catch {
            throw OAuth2Error(code: .invalidConfiguration, message: "an Ed25519 private key is 32 bytes")
        }
        let jwk: [String: JSONValue] = [
            "kty": .string("OKP"),
            "crv": .string("Ed25519"),
            "x": .string(Base64URL.encode(key.publicKey.rawRepresentation)),
        ]
        return JWTSigningKey(algorithm: .edDSA, keyID: keyID, publicJWK: jwk, material: .ed25519(key))
    }

    /// A DPoP key's P-256 signer: no key id, since a proof carries its public JWK.
    static func dpop(p256 key: P256.Signing.PrivateKey) -> JWTSigningKey {
        JWTSigningKey(algorithm: .es256, keyID: nil, publicJWK: ecJWK("P-256", key.publicKey.rawRepresentation), material: .p256(key))
    }

    /// An HMAC key, the client secret of `client_secret_jwt`, for HS256,
    /// HS384 or HS512; its UTF-8 bytes are the key.
    ///
    /// - Throws: ``OAuth2Error/Code/invalidConfiguration`` when the algorithm
    ///   is not an HMAC, or the secret is shorter than the hash's output (32,
    ///   48 or 64 bytes), which RFC 7518 §3.2 forbids.
    public static func hmac(_ secret: Secret, algorithm: JWSAlgorithm = .hs256) throws(OAuth2Error) -> JWTSigningKey {
        let minimum: Int
        switch algorithm {
        case .hs256: minimum = 32
        case .hs384: minimum = 48
        case .hs512: minimum = 64
        default: throw OAuth2Error(code: .invalidConfiguration, message: "an HMAC key cannot sign \(algorithm.rawValue)")
        }
        let bytes = Array(secret.value.utf8)
        guard bytes.count >= minimum else {
            throw OAuth2Error(
                code: .invalidConfiguration,
                message: "the client secret is too short for \(algorithm.rawValue): RFC 7518 §3.2 requires at least \(minimum) bytes"
            )
        }
        return JWTSigningKey(algorithm: algorithm, keyID: nil, publicJWK: nil, material: .hmac(SymmetricKey(data: bytes)))
    }

    /// Signs `signingInput` with the key's algorithm; an ECDSA signature is
    /// the JOSE form, `r || s` (RFC 7518 §3.4).
    ///
    /// - Throws: ``OAuth2Error/Code/invalidConfiguration`` when swift-crypto fails to sign.
    package func sign(_ signingInput: [UInt8]) throws(OAuth2Error) -> [UInt8] {
        do {
            switch material {
            case .rsa(let key):
                let padding: _RSA.Signing.Padding = algorithm.rawValue.hasPrefix("PS") ? .PSS : .insecurePKCS1v1_5
                switch algorithm {
                case .rs384, .ps384:
                    return Array(try key.signature(for: SHA384.hash(data: signingInput), padding: padding).rawRepresentation)
                case .rs512, .ps512:
                    return Array(try key.signature(for: SHA512.hash(data: signingInput), padding: padding).rawRepresentation)
                default: return Array(try key.signature(for: SHA256.hash(data: signingInput), padding: padding).rawRepresentation)
                }
            case .p256(let key): return Array(try key.signature(for: signingInput).rawRepresentation)
            case .p384(let key): return Array(try key.signature(for: signingInput).rawRepresentation)
            case .p521(let key): return Array(try key.signature(for: signingInput).rawRepresentation)
            case .ed25519(let key): return Array(try key.signature(for: signingInput))
            case .hmac(let key):
                switch algorithm {
                case .hs384: return Array(HMAC<SHA384>.authenticationCode(for: signingInput, using: key))
                case .hs512: return Array(HMAC<SHA512>.authenticationCode(for: signingInput, using: key))
                default: return Array(HMAC<SHA256>.authenticationCode(for: signingInput, using: key))
                }
            }
        } catch {
            throw OAuth2Error(code: .invalidConfiguration, message: "signing with the \(algorithm.rawValue) key failed")
        }
    }

    /// The public JWK members of an EC key from its raw `x || y`.
    private static func ecJWK(_ curve: String, _ point: Data) -> [String: JSONValue] {
        let half = point.count / 2
        return [
            "kty": .string("EC"),
            "crv": .string(curve),
            "x": .string(Base64URL.encode(point.prefix(half))),
            "y": .string(Base64URL.encode(point.dropFirst(half))),
        ]
    }
}

extension JWTSigningKey: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// `JWTSigningKey(ES256, kid: …)`: the algorithm and key id, never the key.
    public var description: String {
        "JWTSigningKey(\(algorithm.rawValue), kid: \(keyID ?? "none"))"
    }

    /// The same as ``description``.
    public var debugDescription: String { description }

    /// The algorithm and key id only: `dump` and debuggers never reach the key.
    public var customMirror: Mirror {
        Mirror(self, children: ["algorithm": algorithm, "keyID": keyID as Any], displayStyle: .struct)
    }
}
