#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif
import Crypto
import _CryptoExtras

/// The key a DPoP-bound grant is bound to (RFC 9449): the client proves it
/// holds the key on every request that presents the grant's tokens, so a
/// stolen token is useless without it.
///
/// A key belongs to one grant. It is made when the grant starts (a sign-in, a
/// machine client's first token), stored with the grant's tokens in every
/// store, used by whichever process refreshes next, and deleted with them.
///
/// Its `description`, `debugDescription` and `Mirror` show the algorithm and
/// the RFC 7638 thumbprint, never the private key. It encodes the private
/// key (as a private JWK), which is why a token store keeps it only inside
/// the token's encrypted record.
public struct DPoPKey: Sendable {
    /// The algorithm of its proofs, the proof header's `alg`.
    public var algorithm: JWSAlgorithm { signingKey.algorithm }
    /// The RFC 7638 JWK SHA-256 thumbprint of the public key, base64url: the
    /// `dpop_jkt` of an authorization request and the `jkt` of a bound
    /// token's `cnf` claim.
    public let thumbprint: String
    /// The public JWK with only its required members (`kty` and `crv`, `x`,
    /// `y`, or `n`, `e`): the proof header's `jwk`.
    package let publicJWK: [String: JSONValue]
    /// Signs the proofs.
    private let signingKey: JWTSigningKey
    /// The private key's own bytes, for encoding: raw for P-256 and Ed25519,
    /// PKCS#8 DER for RSA.
    private let privateBytes: [UInt8]

    /// The algorithms a DPoP key can be made for, in this library's order of
    /// preference: ES256 first, as RFC 9449 and every provider that supports
    /// DPoP expect.
    public static let supportedAlgorithms: [JWSAlgorithm] = [.es256, .edDSA, .ps256, .rs256]

    /// Makes a new key for `algorithm`: a P-256 key for ES256, an Ed25519
    /// key for EdDSA, a 2048-bit RSA key for PS256 or RS256.
    ///
    /// - Throws: ``OAuth2Error/Code/invalidConfiguration`` for another algorithm.
    public static func generate(algorithm: JWSAlgorithm = .es256) throws(OAuth2Error) -> DPoPKey {
        switch algorithm {
        case .es256:
            return try DPoPKey(algorithm: algorithm, privateBytes: Array(P256.Signing.PrivateKey().rawRepresentation))
        case .edDSA:
            return try DPoPKey(algorithm: algorithm, privateBytes: Array(Curve25519.Signing.PrivateKey().rawRepresentation))
        case .ps256, .rs256:
            let key: _RSA.Signing.PrivateKey
            do {
                key = try _RSA.Signing.PrivateKey(keySize: .bits2048)
            } catch {
                throw OAuth2Error(code: .invalidConfiguration, message: "making an RSA key for DPoP failed")
            }
            return try DPoPKey(algorithm: algorithm, privateBytes: Array(key.derRepresentation))
        default:
            throw OAuth2Error(
                code: .invalidConfiguration,
                message: "a DPoP key cannot be made for \(algorithm.rawValue); use ES256, EdDSA, PS256 or RS256")
        }
    }

    /// The first of ``supportedAlgorithms`` that is also in `providerAlgorithms`
    /// (the metadata's `dpop_signing_alg_values_supported`), keeping `preferred`
    /// first when the provider allows it; ES256 when the provider did not say.
    ///
    /// - Throws: ``OAuth2Error/Code/invalidConfiguration`` when the provider
    ///   supports none of them, or `preferred` is not one of them.
    public static func algorithm(
        preferred: JWSAlgorithm? = nil, providerAlgorithms: [JWSAlgorithm]?
    ) throws(OAuth2Error) -> JWSAlgorithm {
        if let preferred, !supportedAlgorithms.contains(preferred) {
            // Returned as the choice, it would fail only later, when the key is made.
            throw OAuth2Error(
                code: .invalidConfiguration,
                message:
                    "a DPoP key cannot be made for \(OAuth2Error.sanitize(String(preferred.rawValue.prefix(20)))); use ES256, EdDSA, PS256 or RS256"
            )
        }
        let ours = (preferred.map { [$0] } ?? []) + supportedAlgorithms
        guard let theirs = providerAlgorithms, !theirs.isEmpty else { return ours[0] }
        guard let choice = ours.first(where: { supportedAlgorithms.contains($0) && theirs.contains($0) }) else {
            let named = theirs.prefix(8).map { OAuth2Error.sanitize(String($0.rawValue.prefix(20))) }.joined(separator: ", ")
            throw OAuth2Error(
                code: .invalidConfiguration,
                message: "the provider's DPoP algorithms (\(named)) include none this library signs with (ES256, EdDSA, PS256, RS256)")
        }
        return choice
    }

    private init(algorithm: JWSAlgorithm, privateBytes: [UInt8]) throws(OAuth2Error) {
        let key: JWTSigningKey
        switch algorithm {
        case .es256:
            guard let p256 = try? P256.Signing.PrivateKey(rawRepresentation: privateBytes) else {
                throw OAuth2Error(code: .invalidConfiguration, message: "a DPoP key's P-256 private key is damaged")
            }
            key = JWTSigningKey.dpop(p256: p256)
        case .edDSA:
            key = try JWTSigningKey.ed25519(rawRepresentation: privateBytes)
        case .ps256, .rs256:
            guard let rsa = try? _RSA.Signing.PrivateKey(derRepresentation: privateBytes) else {
                throw OAuth2Error(code: .invalidConfiguration, message: "a DPoP key's RSA private key is damaged")
            }
            key = try JWTSigningKey.rsa(pem: rsa.pemRepresentation, algorithm: algorithm)
        default:
            throw OAuth2Error(code: .invalidConfiguration, message: "a DPoP key cannot be made for \(algorithm.rawValue)")
        }
        guard let jwk = key.publicJWK else {
            throw OAuth2Error(code: .invalidConfiguration, message: "a DPoP key must be asymmetric")
        }
        let required: Set<String> = ["kty", "crv", "x", "y", "n", "e"]
        publicJWK = jwk.filter { required.contains($0.key) }
        thumbprint = try Self.thumbprint(of: publicJWK)
        signingKey = key
        self.privateBytes = privateBytes
    }

    /// The RFC 7638 thumbprint: SHA-256 of the required members, keys sorted,
    /// no whitespace, base64url.
    package static func thumbprint(of publicJWK: [String: JSONValue]) throws(OAuth2Error) -> String {
        Base64URL.encode(SHA256.hash(data: try JOSEJSON.serialize(.object(publicJWK))))
    }

    /// A DPoP proof (RFC 9449 §4.2) for one request: header `typ` `dpop+jwt`,
    /// `alg` and `jwk`; claims `jti` (128 random bits), `htm`, `htu` (the
    /// URL normalised, without query or fragment), `iat` (whole seconds),
    /// `ath` (the access token's SHA-256, base64url) when a token is
    /// presented, and `nonce` when the server gave one.
    ///
    /// A proof is made per request and per hop, never cached or reused.
    ///
    /// - Throws: ``OAuth2Error/Code/invalidConfiguration`` when the URL is
    ///   not an absolute http or https URL, or signing fails.
    package func proof(
        method: String, url: String, accessToken: Secret? = nil, nonce: String? = nil, now: Date
    ) throws(OAuth2Error) -> Secret {
        var claims: [String: JSONValue] = [
            "jti": .string(Base64URL.encode(SecureRandom.bytes(16))),
            "htm": .string(method),
            "htu": .string(try Self.targetURI(url)),
            "iat": .number(now.timeIntervalSince1970.rounded(.down)),
        ]
        if let accessToken {
            claims["ath"] = .string(Base64URL.encode(SHA256.hash(data: Array(accessToken.value.utf8))))
        }
        if let nonce { claims["nonce"] = .string(nonce) }
        let header: [String: JSONValue] = [
            "typ": .string("dpop+jwt"), "alg": .string(algorithm.rawValue), "jwk": .object(publicJWK),
        ]
        let signingInput =
            Base64URL.encode(try JOSEJSON.serialize(.object(header))) + "." + Base64URL.encode(try JOSEJSON.serialize(.object(claims)))
        let signature = try signingKey.sign(Array(signingInput.utf8))
        return Secret("\(signingInput).\(Base64URL.encode(signature))")
    }

    /// The `htu` of a request URL (RFC 9449 §4.3, RFC 3986 §6.2.2–6.2.3):
    /// scheme and host lower-cased, the scheme's default port left out, an
    /// empty path written `/`, no query, no fragment, no userinfo.
    package static func targetURI(_ url: String) throws(OAuth2Error) -> String {
        guard let parts = URLParts(Substring(url)), let origin = parts.normalizedHTTPOrigin else {
            throw OAuth2Error(code: .invalidConfiguration, message: "a DPoP proof needs an absolute http or https URL")
        }
        return origin + parts.normalizedPath
    }
}

extension DPoPKey: Hashable {
    /// Two keys are equal when their public keys and algorithms are.
    public static func == (lhs: DPoPKey, rhs: DPoPKey) -> Bool {
        lhs.algorithm == rhs.algorithm && lhs.thumbprint == rhs.thumbprint
    }

    /// Hashes the algorithm and thumbprint.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(algorithm)
        hasher.combine(thumbprint)
    }
}

extension DPoPKey: Codable {
    private enum CodingKeys: String, CodingKey {
        case algorithm = "alg"
        case privateKey = "d"
    }

    /// Decodes the algorithm and the private key, and checks the key.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let algorithm = try container.decode(JWSAlgorithm.self, forKey: .algorithm)
        let encoded = try container.decode(String.self, forKey: .privateKey)
        guard let bytes = Base64URL.decode(encoded) else {
            throw DecodingError.dataCorruptedError(forKey: .privateKey, in: container, debugDescription: "not base64url")
        }
        do {
            try self.init(algorithm: algorithm, privateBytes: bytes)
        } catch {
            throw DecodingError.dataCorruptedError(forKey: .privateKey, in: container, debugDescription: "not a usable DPoP key")
        }
    }

    /// Encodes the algorithm and the private key: only ever inside a token's
    /// record, which a store encrypts.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(algorithm, forKey: .algorithm)
        try container.encode(Base64URL.encode(privateBytes), forKey: .privateKey)
    }
}

extension DPoPKey: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// `DPoPKey(ES256, jkt: …)`: the algorithm and thumbprint, never the key.
    public var description: String { "DPoPKey(\(algorithm.rawValue), jkt: \(thumbprint))" }

    /// The same as ``description``.
    public var debugDescription: String { description }

    /// The algorithm and thumbprint only: `dump` and debuggers never reach the key.
    public var customMirror: Mirror {
        Mirror(self, children: ["algorithm": algorithm, "thumbprint": thumbprint], displayStyle: .struct)
    }
}
