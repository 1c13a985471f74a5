#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// The claims of an OpenID Connect ID token that the client verified
/// (OpenID Connect Core 1.0 §2): who signed the user in, for which client,
/// when, and what the provider says about the user.
///
/// The client makes one only from a token whose signature, issuer, audience,
/// lifetime and nonce it checked; it is kept with the ``AccessToken``
/// (``AccessToken/idToken``) and so stored with it. The signed token itself
/// is not in here (it is a credential, kept in the token's extra fields as
/// `id_token`); its `description` shows the issuer and subject only.
///
/// Identify a user by ``issuer`` and ``subject`` together: `sub` is unique
/// only within one issuer, and an email address can change or be reassigned.
public struct IDToken: Sendable, Hashable, Codable {
    /// `iss`: the issuer, exactly as the provider's metadata names it, or as
    /// the configuration's ``IssuerRule`` accepts it (a tenant's issuer for a
    /// template, another spelling for ``IssuerRule/anyOf(_:)``).
    public let issuer: String
    /// `sub`: the user's identifier at the issuer, never reassigned.
    public let subject: String
    /// `aud`: the clients the token is for; the client's own id is among them.
    public let audience: [String]
    /// `exp`: when the ID token expires (the sign-in's proof, not the session's length).
    public let expiresAt: Date
    /// `iat`: when the provider issued it.
    public let issuedAt: Date
    /// `nbf`, when present.
    public let notBefore: Date?
    /// `auth_time`: when the user last authenticated, when the provider said.
    public let authTime: Date?
    /// `azp`: the authorized party, when the provider said.
    public let authorizedParty: String?
    /// `email`, when the provider shares it (the `email` scope).
    public var email: String? { claims["email"]?.stringValue }
    /// `email_verified`, when the provider said, as a boolean or as the
    /// string `"true"`/`"false"` (``booleanClaim(_:)``).
    public var emailVerified: Bool? { booleanClaim("email_verified") }
    /// `is_private_email` (Sign in with Apple: the address is a relay of
    /// Apple's private email relay service), when the provider said, read as ``booleanClaim(_:)``.
    public var isPrivateEmail: Bool? { booleanClaim("is_private_email") }
    /// A boolean claim, sent as a JSON boolean or as the string `"true"` or
    /// `"false"` (Sign in with Apple sends `email_verified` and
    /// `is_private_email` either way); `nil` when absent or anything else.
    public func booleanClaim(_ name: String) -> Bool? {
        switch claims[name] {
        case .bool(let value)?: return value
        case .string("true")?: return true
        case .string("false")?: return false
        default: return nil
        }
    }
    /// `hd`: the hosted domain (Google Workspace) of the user's account, when
    /// the provider said; absent for a consumer account. Require it with
    /// ``OpenIDSettings/allowedHostedDomains``.
    public var hostedDomain: String? { claims["hd"]?.stringValue }
    /// `tid`: the tenant (Microsoft Entra ID) of the user's account, when the
    /// provider said; personal Microsoft accounts have `9188040d-6c67-4c5b-b112-36a304b66dad`.
    public var tenantID: String? { claims["tid"]?.stringValue }
    /// `name`, when the provider shares it (the `profile` scope).
    public var name: String? { claims["name"]?.stringValue }
    /// `preferred_username`, when the provider shares it; not unique, not stable.
    public var preferredUsername: String? { claims["preferred_username"]?.stringValue }
    /// Every claim of the token, as the provider sent it.
    public let claims: [String: JSONValue]

    /// Reads the registered claims of a token's payload, checking their types.
    ///
    /// - Throws: ``OAuth2Error`` `invalid_id_token` when `iss`, `sub`, `aud`,
    ///   `exp` or `iat` is missing or of the wrong type, or an optional
    ///   registered claim has the wrong type.
    public init(claims: [String: JSONValue]) throws(OAuth2Error) {
        func invalid(_ problem: String) -> OAuth2Error {
            OAuth2Error(code: .invalidIDToken, message: "the ID token \(problem)")
        }
        func string(_ name: String) throws(OAuth2Error) -> String {
            guard let value = claims[name]?.stringValue, !value.isEmpty else {
                throw invalid("has no \(name) string")
            }
            return value
        }
        func date(_ name: String, required: Bool) throws(OAuth2Error) -> Date? {
            switch claims[name] {
            case .number(let seconds)? where seconds.isFinite && seconds >= 0 && seconds < 253_402_300_800:
                return Date(timeIntervalSince1970: seconds)
            case nil where !required, .null? where !required:
                return nil
            case nil, .null?:
                throw invalid("has no \(name)")
            default:
                throw invalid("has a \(name) that is not a time in seconds")
            }
        }
        issuer = try string("iss")
        subject = try string("sub")
        audience = try IDToken.audience(in: claims, invalid: invalid)
        guard let expiresAt = try date("exp", required: true), let issuedAt = try date("iat", required: true) else {
            throw invalid("has no exp or iat")
        }
        self.expiresAt = expiresAt
        self.issuedAt = issuedAt
        notBefore = try date("nbf", required: false)
        authTime = try date("auth_time", required: false)
        switch claims["azp"] {
        case nil, .null?: authorizedParty = nil
        case .string(let value)?: authorizedParty = value
        default: throw invalid("has an azp that is not a string")
        }
        switch claims["nonce"] {
        case nil, .null?, .string?: break
        default: throw invalid("has a nonce that is not a string")
        }
        self.claims = claims
    }

    /// `nonce`: the value the client sent in the authorization request, when the token has one.
    public var nonce: String? { claims["nonce"]?.stringValue }
    /// `at_hash`: half a hash of the access token, when the provider sent one.
    public var accessTokenHash: String? { claims["at_hash"]?.stringValue }
}

extension IDToken: CustomStringConvertible {
    /// The issuer and subject; never the other claims.
    public var description: String { "IDToken(iss \(issuer), sub \(subject))" }
}

extension IDToken: CustomReflectable {
    /// What `dump` and debuggers show: the issuer, subject, audience and times, not the other claims.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "issuer": issuer,
                "subject": subject,
                "audience": audience,
                "expiresAt": expiresAt,
                "issuedAt": issuedAt,
            ], displayStyle: .struct)
    }
}

extension IDToken {
    /// A JWT's `aud` (RFC 7519 §4.1.3): one string or a non-empty array of
    /// strings, as ID tokens and back-channel logout tokens both carry it.
    static func audience(in claims: [String: JSONValue], invalid: (String) -> OAuth2Error) throws(OAuth2Error) -> [String] {
        switch claims["aud"] {
        case .string(let value)? where !value.isEmpty:
            return [value]
        case .array(let values)? where !values.isEmpty:
            var audience: [String] = []
            for value in values {
                guard let text = value.stringValue else { throw invalid("has an aud with a non-string element") }
                audience.append(text)
            }
            return audience
        default:
            throw invalid("has no aud")
        }
    }
}
