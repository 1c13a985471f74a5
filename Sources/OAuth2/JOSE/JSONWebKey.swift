#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Crypto
import _CryptoExtras

/// A public key of a provider's key set (RFC 7517): RSA (`n`, `e`, at least
/// 2048 bits), EC (`crv` P-256, P-384 or P-521, `x`, `y`) or OKP (`crv`
/// Ed25519, `x`), for verifying the JWS it signs, such as an ID token.
///
/// Only the public members are read; a key published with its private
/// members (`d`, `p`, `q`, …) by mistake is used as the public key it also
/// is, and they are never kept. Symmetric (`oct`) keys are refused: a
/// provider's signature is always verified with a public key.
public struct JSONWebKey: Sendable, Hashable {
    /// The key id (`kid`), which a JWS header names to pick its key.
    public let keyID: String?
    /// The key type (`kty`): `"RSA"`, `"EC"` or `"OKP"`.
    public let keyType: String
    /// The intended use (`use`): `"sig"`, or nil when the set did not say; a
    /// key for anything else (`"enc"`) never verifies a signature.
    public let use: String?
    /// The one algorithm the key is for (`alg`), when the set names one.
    public let algorithm: JWSAlgorithm?
    /// The operations the key is for (`key_ops`), when the set names them.
    let operations: [String]?
    /// The public key itself.
    let material: Material

    /// The public members of a key, as decoded bytes; checked to make a key
    /// of swift-crypto when the JWK was parsed.
    enum Material: Sendable, Hashable {
        /// The modulus and public exponent, big-endian.
        case rsa(modulus: [UInt8], exponent: [UInt8])
        /// The curve (`P-256`, `P-384`, `P-521`) and the point's coordinates.
        case ec(curve: String, x: [UInt8], y: [UInt8])
        /// An Ed25519 public key, its 32 bytes.
        case ed25519([UInt8])
    }

    /// Parses one JWK object.
    ///
    /// Private members (`d`, `p`, `q`, `dp`, `dq`, `qi`, `oth`) are ignored,
    /// never kept.
    ///
    /// - Throws: ``OAuth2Error/Code/invalidJWKS`` for a key of an unknown or
    ///   symmetric type or curve, a member of the wrong type, a coordinate of
    ///   the wrong length, an RSA modulus under 2048 bits, or a point that is
    ///   not on its curve.
    package init(_ object: [String: JSONValue]) throws(OAuth2Error) {
        guard case .string(let keyType)? = object["kty"] else {
            throw Self.invalid("a key has no kty")
        }
        let keyID = try Self.optionalString("kid", in: object)
        let use = try Self.optionalString("use", in: object)
        let algorithm = try Self.optionalString("alg", in: object).map(JWSAlgorithm.init(rawValue:))
        var operations: [String]?
        if let value = object["key_ops"] {
            guard case .array(let items) = value else { throw Self.invalid("key_ops is not an array") }
            var names: [String] = []
            for item in items {
                guard case .string(let operation) = item else { throw Self.invalid("key_ops holds a value that is not a string") }
                names.append(operation)
            }
            operations = names
        }
        let material: Material
        switch keyType {
        case "RSA":
            let modulus = try Self.bytes("n", in: object)
            let exponent = try Self.bytes("e", in: object)
            do {
                _ = try _RSA.Signing.PublicKey(n: modulus, e: exponent)
            } catch {
                throw Self.invalid("an RSA key is not a usable key of 2048 bits or more")
            }
            material = .rsa(modulus: modulus, exponent: exponent)
        case "EC":
            let curve = try Self.optionalString("crv", in: object) ?? ""
            let x = try Self.bytes("x", in: object)
            let y = try Self.bytes("y", in: object)
            guard let size = Self.coordinateSize(curve) else { throw Self.invalid("an EC key is of an unsupported curve") }
            guard x.count == size, y.count == size else { throw Self.invalid("an EC key's coordinates are not of its curve's size") }
            material = .ec(curve: curve, x: x, y: y)
            guard material.isUsable else { throw Self.invalid("an EC key's point is not on its curve") }
        case "OKP":
            guard try Self.optionalString("crv", in: object) == "Ed25519" else {
                throw Self.invalid("an OKP key is of an unsupported curve")
            }
            let x = try Self.bytes("x", in: object)
            material = .ed25519(x)
            guard material.isUsable else { throw Self.invalid("an Ed25519 key is not 32 bytes") }
        default:
            throw Self.invalid("a key is of the unsupported type \(OAuth2Error.sanitize(String(keyType.prefix(16))))")
        }
        self.keyID = keyID
        self.keyType = keyType
        self.use = use
        self.algorithm = algorithm
        self.operations = operations
        self.material = material
    }

    /// Whether this key may verify a JWS of `algorithm`: its type fits the
    /// algorithm (RSA for RS* and PS*, EC P-256 for ES256, P-384 for ES384,
    /// P-521 for ES512, OKP Ed25519 for EdDSA), its `use` is absent or
    /// `"sig"`, its `alg` is absent or the same, and its `key_ops`, when
    /// given, include `"verify"`.
    package func canVerify(_ algorithm: JWSAlgorithm) -> Bool {
        guard use == nil || use == "sig" else { return false }
        guard self.algorithm == nil || self.algorithm == algorithm else { return false }
        if let operations, !operations.contains("verify") { return false }
        switch material {
        case .rsa: return algorithm.isRSA
        case .ec(let curve, _, _):
            switch algorithm {
            case .es256: return curve == "P-256"
            case .es384: return curve == "P-384"
            case .es512: return curve == "P-521"
            default: return false
            }
        case .ed25519: return algorithm == .edDSA
        }
    }

    /// Verifies a JWS signature over `signingInput`: false for a wrong
    /// signature, and for an algorithm this key cannot verify (see
    /// ``canVerify(_:)``). An ECDSA signature is the JOSE form, `r || s`
    /// of the curve's size (RFC 7518 §3.4), never DER.
    package func isValidSignature(_ signature: [UInt8], for signingInput: [UInt8], algorithm: JWSAlgorithm) -> Bool {
        guard canVerify(algorithm) else { return false }
        switch material {
        case .rsa(let modulus, let exponent):
            guard let key = try? _RSA.Signing.PublicKey(n: modulus, e: exponent) else { return false }
            let rsaSignature = _RSA.Signing.RSASignature(rawRepresentation: signature)
            switch algorithm {
            case .rs256: return key.isValidSignature(rsaSignature, for: SHA256.hash(data: signingInput), padding: .insecurePKCS1v1_5)
            case .rs384: return key.isValidSignature(rsaSignature, for: SHA384.hash(data: signingInput), padding: .insecurePKCS1v1_5)
            case .rs512: return key.isValidSignature(rsaSignature, for: SHA512.hash(data: signingInput), padding: .insecurePKCS1v1_5)
            case .ps256: return key.isValidSignature(rsaSignature, for: SHA256.hash(data: signingInput), padding: .PSS)
            case .ps384: return key.isValidSignature(rsaSignature, for: SHA384.hash(data: signingInput), padding: .PSS)
            case .ps512: return key.isValidSignature(rsaSignature, for: SHA512.hash(data: signingInput), padding: .PSS)
            default: return false
            }
        case .ec(let curve, let x, let y):
            let size = Self.coordinateSize(curve) ?? 0
            // The JOSE form only: exactly r || s, so a DER signature never parses.
            guard signature.count == 2 * size else { return false }
            switch curve {
            case "P-256":
                guard let key = try? P256.Signing.PublicKey(rawRepresentation: x + y),
                    let ecdsa = try? P256.Signing.ECDSASignature(rawRepresentation: signature)
                else { return false }
                return key.isValidSignature(ecdsa, for: signingInput)
            case "P-384":
                guard let key = try? P384.Signing.PublicKey(rawRepresentation: x + y),
                    let ecdsa = try? P384.Signing.ECDSASignature(rawRepresentation: signature)
                else { return false }
                return key.isValidSignature(ecdsa, for: signingInput)
            case "P-521":
                guard let key = try? P521.Signing.PublicKey(rawRepresentation: x + y),
                    let ecdsa = try? P521.Signing.ECDSASignature(rawRepresentation: signature)
                else { return false }
                return key.isValidSignature(ecdsa, for: signingInput)
            default:
                return false
            }
        case .ed25519(let x):
            guard let key = try? Curve25519.Signing.PublicKey(rawRepresentation: x) else { return false }
            return key.isValidSignature(signature, for: signingInput)
        }
    }

    /// The size in bytes of a coordinate of an EC curve this library supports.
    static func coordinateSize(_ curve: String) -> Int? {
        switch curve {
        case "P-256": 32
        case "P-384": 48
        case "P-521": 66
        default: nil
        }
    }

    private static func invalid(_ message: String) -> OAuth2Error {
        OAuth2Error(code: .invalidJWKS, message: message)
    }

    private static func optionalString(_ name: String, in object: [String: JSONValue]) throws(OAuth2Error) -> String? {
        guard let value = object[name] else { return nil }
        guard case .string(let string) = value else { throw invalid("a key's \(name) is not a string") }
        return string
    }

    private static func bytes(_ name: String, in object: [String: JSONValue]) throws(OAuth2Error) -> [UInt8] {
        guard case .string(let text)? = object[name] else { throw invalid("a key has no \(name) string") }
        guard let bytes = Base64URL.decode(text), !bytes.isEmpty else { throw invalid("a key's \(name) is not base64url") }
        return bytes
    }
}

extension JSONWebKey.Material {
    /// Whether swift-crypto accepts these members as a public key.
    var isUsable: Bool {
        switch self {
        case .rsa(let modulus, let exponent):
            return (try? _RSA.Signing.PublicKey(n: modulus, e: exponent)) != nil
        case .ec(let curve, let x, let y):
            switch curve {
            case "P-256": return (try? P256.Signing.PublicKey(rawRepresentation: x + y)) != nil
            case "P-384": return (try? P384.Signing.PublicKey(rawRepresentation: x + y)) != nil
            case "P-521": return (try? P521.Signing.PublicKey(rawRepresentation: x + y)) != nil
            default: return false
            }
        case .ed25519(let x):
            return (try? Curve25519.Signing.PublicKey(rawRepresentation: x)) != nil
        }
    }
}

extension JSONWebKey: CustomStringConvertible {
    /// `JSONWebKey(RSA, kid: …, alg: …)`: the type, key id and algorithm.
    public var description: String {
        "JSONWebKey(\(keyType), kid: \(keyID ?? "none"), alg: \(algorithm?.rawValue ?? "any"))"
    }
}
