#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The authorization request as a signed request object (JAR, RFC 9101): a
/// JWT of the authorization parameters, signed with the client's assertion key.
enum RequestObject {
    /// The `typ` of a request object's header (RFC 9101 §4).
    static let type = "oauth-authz-req+jwt"
    /// How long a request object is valid: it must outlive the user's way
    /// through the browser when it is sent by value.
    static let lifetime: Double = 600
    /// The claims the request object sets itself; no authorization parameter may be one of them.
    static let reservedClaims: Set<String> = ["iss", "aud", "iat", "exp", "nbf", "jti"]

    /// Signs `parameters` as a request object: one claim per parameter (an
    /// array of strings for a parameter that repeats, such as `resource`),
    /// `iss` the client id, `aud` the issuer, `iat` and `nbf` now, `exp`
    /// ``lifetime`` later, and a random `jti`; the header's `typ` is
    /// `oauth-authz-req+jwt` and its `kid` the key's.
    ///
    /// - Throws: `invalid_configuration` without ``OAuth2Configuration/clientAssertionKey``
    ///   or ``OAuth2Configuration/issuer``, when the provider's
    ///   `request_object_signing_alg_values_supported` does not list the
    ///   key's algorithm, or when a parameter is named like one of the claims
    ///   the request object sets.
    static func sign(parameters: [(String, String)], configuration: OAuth2Configuration, now: Date) throws(OAuth2Error) -> Secret {
        guard let key = configuration.clientAssertionKey else {
            throw invalidConfiguration("a signed request object (RFC 9101) needs the configuration's clientAssertionKey")
        }
        guard let issuer = configuration.issuer else {
            throw invalidConfiguration("a signed request object (RFC 9101 §4) needs the issuer, its aud")
        }
        let allowed = configuration.requestObjectSigningAlgValuesSupported
        guard allowed.isEmpty || allowed.contains(key.algorithm.rawValue) else {
            throw invalidConfiguration(
                "the provider's request_object_signing_alg_values_supported (\(allowed.joined(separator: " "))) does not list the key's \(key.algorithm.rawValue)"
            )
        }
        var claims: [String: JSONValue] = [:]
        for (name, value) in parameters {
            guard !reservedClaims.contains(name) else {
                throw invalidConfiguration("the authorization parameter \(name) would replace a claim of the signed request object")
            }
            switch claims[name] {
            case nil: claims[name] = .string(value)
            case .array(let values)?: claims[name] = .array(values + [.string(value)])
            case let first?: claims[name] = .array([first, .string(value)])
            }
        }
        let issuedAt = now.timeIntervalSince1970.rounded(.down)
        claims["iss"] = .string(configuration.clientID)
        claims["aud"] = .string(issuer)
        claims["iat"] = .number(issuedAt)
        claims["nbf"] = .number(issuedAt)
        claims["exp"] = .number(expiresAt(signedAt: now).timeIntervalSince1970)
        claims["jti"] = .string(Base64URL.encode(SecureRandom.bytes(16)))
        return try JWT.sign(claims: claims, key: key, type: type)
    }

    /// The `exp` of an object signed at `now`: whole seconds, ``lifetime`` after its `iat`.
    static func expiresAt(signedAt now: Date) -> Date {
        Date(timeIntervalSince1970: now.timeIntervalSince1970.rounded(.down) + lifetime)
    }

    private static func invalidConfiguration(_ message: String) -> OAuth2Error {
        OAuth2Error(code: .invalidConfiguration, message: message)
    }
}
