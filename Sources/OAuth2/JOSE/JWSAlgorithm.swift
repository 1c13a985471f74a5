#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A JWS algorithm (RFC 7518 §3.1; EdDSA from RFC 8037), by its `alg` name.
///
/// Any name can be held, so a header naming an unknown algorithm can be told
/// apart from a malformed one; only the static members are ever verified or
/// signed with. Encodes as its bare name.
public struct JWSAlgorithm: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible, ExpressibleByStringLiteral {
    /// The name as it appears in a JWS header's `alg` and a JWK's `alg`.
    public let rawValue: String

    /// An algorithm from its name, such as a provider's `id_token_signing_alg_values_supported`.
    public init(rawValue: String) { self.rawValue = rawValue }
    /// An algorithm from a literal.
    public init(stringLiteral value: String) { self.rawValue = value }

    /// RSASSA-PKCS1-v1_5 with SHA-256, the algorithm every OpenID provider supports.
    public static let rs256: JWSAlgorithm = "RS256"
    /// RSASSA-PKCS1-v1_5 with SHA-384.
    public static let rs384: JWSAlgorithm = "RS384"
    /// RSASSA-PKCS1-v1_5 with SHA-512.
    public static let rs512: JWSAlgorithm = "RS512"
    /// RSASSA-PSS with SHA-256 and MGF1 with SHA-256.
    public static let ps256: JWSAlgorithm = "PS256"
    /// RSASSA-PSS with SHA-384 and MGF1 with SHA-384.
    public static let ps384: JWSAlgorithm = "PS384"
    /// RSASSA-PSS with SHA-512 and MGF1 with SHA-512.
    public static let ps512: JWSAlgorithm = "PS512"
    /// ECDSA on P-256 with SHA-256.
    public static let es256: JWSAlgorithm = "ES256"
    /// ECDSA on P-384 with SHA-384.
    public static let es384: JWSAlgorithm = "ES384"
    /// ECDSA on P-521 with SHA-512.
    public static let es512: JWSAlgorithm = "ES512"
    /// EdDSA (RFC 8037); this library supports its Ed25519 curve.
    public static let edDSA: JWSAlgorithm = "EdDSA"
    /// HMAC with SHA-256: a shared secret, for `client_secret_jwt` only, never verified.
    public static let hs256: JWSAlgorithm = "HS256"
    /// HMAC with SHA-384.
    public static let hs384: JWSAlgorithm = "HS384"
    /// HMAC with SHA-512.
    public static let hs512: JWSAlgorithm = "HS512"

    /// Whether this is an HMAC (HS256, HS384, HS512): a shared secret, not a key pair.
    public var isSymmetric: Bool {
        self == .hs256 || self == .hs384 || self == .hs512
    }

    /// Whether this is an RSA algorithm (RS* or PS*).
    var isRSA: Bool {
        [.rs256, .rs384, .rs512, .ps256, .ps384, .ps512].contains(self)
    }

    /// Whether this is one of the algorithms of a public key this library verifies and signs with.
    var isSupportedAsymmetric: Bool {
        isRSA || self == .es256 || self == .es384 || self == .es512 || self == .edDSA
    }

    /// The name, such as `RS256`.
    public var description: String { rawValue }

    /// Decodes the bare name.
    public init(from decoder: any Decoder) throws {
        rawValue = try decoder.singleValueContainer().decode(String.self)
    }

    /// Encodes the bare name.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}
