#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// An access token with what came with it: type, expiry, refresh token,
/// granted scopes and the provider's other fields.
///
/// Codable, so a ``TokenStore`` can keep it. Its `description` redacts the
/// tokens and leaves out the extra fields (an `id_token` is a credential too).
public struct AccessToken: Sendable, Hashable, Codable {
    /// The fields, shared by copies until one of them is changed.
    ///
    /// A token is copied on every signed request (out of the client's state
    /// machine, under its lock) and its fields are many strings, arrays and
    /// optionals: copying and destroying them field by field was a seventh of
    /// the client's own work per request. A copy now costs one retain. Equality, hashing and the stored
    /// form are the fields' own, synthesized as the token's were before.
    private var box: Box

    /// The access token sent as `Authorization: Bearer`.
    public var accessToken: Secret {
        get { box.fields.accessToken }
        set {
            let box = uniqueBox()
            box.fields.accessToken = newValue
            box.authorization = Box.authorization(for: newValue, type: box.fields.tokenType)
        }
    }
    /// The token type as the provider spelled it; only `Bearer` is used.
    public var tokenType: String {
        get { box.fields.tokenType }
        set {
            let box = uniqueBox()
            box.fields.tokenType = newValue
            box.authorization = Box.authorization(for: box.fields.accessToken, type: newValue)
        }
    }
    /// When the token expires, computed from the time the request was sent; `nil` when the provider did not say.
    public var expiresAt: Date? {
        get { box.fields.expiresAt }
        set { uniqueBox().fields.expiresAt = newValue }
    }
    /// When the token was requested: the start of its lifetime. `nil` for a
    /// token made by hand or stored before this was recorded.
    public var issuedAt: Date? {
        get { box.fields.issuedAt }
        set { uniqueBox().fields.issuedAt = newValue }
    }
    /// The refresh token, when the provider issued one.
    public var refreshToken: Secret? {
        get { box.fields.refreshToken }
        set { uniqueBox().fields.refreshToken = newValue }
    }
    /// The scopes granted: the provider's `scope` when it sent one, else those requested.
    public var scopes: [String] {
        get { box.fields.scopes }
        set { uniqueBox().fields.scopes = newValue }
    }
    /// The response's other fields, verbatim.
    public var extraFields: [String: JSONValue] {
        get { box.fields.extraFields }
        set { uniqueBox().fields.extraFields = newValue }
    }
    /// The provider and client the token was issued to; `nil` for a token
    /// stored before bindings existed (the client stamps it when it next saves).
    public var binding: TokenBinding? {
        get { box.fields.binding }
        set { uniqueBox().fields.binding = newValue }
    }
    /// The grant that obtained the token, when the client ran it; lets a
    /// token without a refresh token be renewed by running the grant again.
    public var grant: TokenGrant? {
        get { box.fields.grant }
        set { uniqueBox().fields.grant = newValue }
    }
    /// The verified claims of the OpenID Connect ID token that came with the
    /// token (or with the sign-in it was refreshed from); `nil` without OpenID Connect.
    /// The signed ID token itself is in ``extraFields`` as `id_token`.
    public var idToken: IDToken? {
        get { box.fields.idToken }
        set { uniqueBox().fields.idToken = newValue }
    }
    /// An ID token a refresh brought that is not verified: deferred (the
    /// client verifies it again later) or refused (the token is held, never
    /// used); `nil` when every ID token that came was verified. See ``UnverifiedIDToken``.
    public var unverifiedIDToken: UnverifiedIDToken? {
        get { box.fields.unverifiedIDToken }
        set { uniqueBox().fields.unverifiedIDToken = newValue }
    }
    /// The key the grant's tokens are bound to (RFC 9449), when the grant is
    /// DPoP-bound: every request that presents them carries a proof made with
    /// it, and a refresh keeps it. Stored with the token (encrypted where the
    /// store encrypts), shown nowhere but as its thumbprint.
    public var dpopKey: DPoPKey? {
        get { box.fields.dpopKey }
        set { uniqueBox().fields.dpopKey = newValue }
    }
    /// The SHA-256 thumbprint (RFC 8705 §3.1 `x5t#S256`) of the client
    /// certificate the token was obtained with over mutual TLS; `nil` when it
    /// was obtained without one.
    ///
    /// A provider may bind the token to that certificate, so
    /// ``SigningTransport`` sends it only on a request that presents the
    /// same certificate (``ClientCertificate/thumbprint``), never with another or none.
    public var certificateThumbprint: String? {
        get { box.fields.certificateThumbprint }
        set { uniqueBox().fields.certificateThumbprint = newValue }
    }

    /// Creates a token.
    public init(
        accessToken: Secret,
        tokenType: String = "Bearer",
        expiresAt: Date? = nil,
        refreshToken: Secret? = nil,
        scopes: [String] = [],
        extraFields: [String: JSONValue] = [:],
        binding: TokenBinding? = nil,
        grant: TokenGrant? = nil,
        idToken: IDToken? = nil
    ) {
        box = Box(
            Fields(
                accessToken: accessToken, tokenType: tokenType, expiresAt: expiresAt, refreshToken: refreshToken,
                scopes: scopes, extraFields: extraFields, binding: binding, grant: grant, idToken: idToken))
    }

    /// `Authorization: Bearer` and the token, the field a signed request
    /// carries: built, and its value checked, once per token rather than on
    /// every request (the check reads every byte of the token, and JWT
    /// access tokens run to a kilobyte or more).
    package var authorizationField: HTTPField { box.authorization }

    /// The box, copied first when another token shares it.
    private mutating func uniqueBox() -> Box {
        if !isKnownUniquelyReferenced(&box) {
            box = Box(copying: box)
        }
        return box
    }

    /// A token's stored fields, in the order and with the names the token's
    /// synthesized conformances used: its `Codable` form is the token's.
    private struct Fields: Sendable, Hashable, Codable {
        var accessToken: Secret
        var tokenType: String
        var expiresAt: Date?
        var issuedAt: Date?
        var refreshToken: Secret?
        var scopes: [String]
        var extraFields: [String: JSONValue]
        var binding: TokenBinding?
        var grant: TokenGrant?
        var idToken: IDToken?
        var unverifiedIDToken: UnverifiedIDToken?
        var dpopKey: DPoPKey?
        var certificateThumbprint: String?
    }

    /// The fields of one or more equal tokens.
    ///
    /// `@unchecked Sendable`: a box is changed only through `uniqueBox()`,
    /// by the one token that holds it, so a box that two tokens (or two
    /// threads) can see is never written.
    private final class Box: @unchecked Sendable {
        var fields: Fields
        /// ``AccessToken/authorizationField`` for `fields.accessToken`.
        var authorization: HTTPField

        init(_ fields: Fields) {
            self.fields = fields
            authorization = Self.authorization(for: fields.accessToken, type: fields.tokenType)
        }

        init(copying other: Box) {
            fields = other.fields
            authorization = other.authorization
        }

        static func authorization(for token: Secret, type: String) -> HTTPField {
            // RFC 9449 §7.1: a DPoP-bound token goes in the DPoP scheme, never as a bearer token.
            let scheme = type.utf8.equalsIgnoringASCIICase("dpop") ? "DPoP" : "Bearer"
            return HTTPField(name: .authorization, value: "\(scheme) \(token.value)")
        }
    }

    public static func == (lhs: AccessToken, rhs: AccessToken) -> Bool {
        lhs.box === rhs.box || lhs.box.fields == rhs.box.fields
    }

    public func hash(into hasher: inout Hasher) {
        box.fields.hash(into: &hasher)
    }

    public init(from decoder: any Decoder) throws {
        box = Box(try Fields(from: decoder))
    }

    public func encode(to encoder: any Encoder) throws {
        try box.fields.encode(to: encoder)
    }

    /// The signed ID token (`id_token`) the provider sent, for an
    /// end-session request's `id_token_hint`; `nil` when there is none.
    public var rawIDToken: Secret? {
        extraFields["id_token"]?.stringValue.map(Secret.opaque)
    }

    /// Whether the token has expired, or will within `skew` of `now`.
    ///
    /// The skew counts at most half the token's lifetime (when
    /// ``issuedAt`` is known): a token that lives 2 seconds, or 60 against a
    /// 60-second skew, is used for the first half of its life instead of
    /// being refreshed before every use. A token without an expiry never
    /// expires by this test; the resource server's 401 tells when it has.
    public func isExpired(at now: Date, skew: Duration = .zero) -> Bool {
        isExpired(at: now, skewSeconds: skew.timeInterval)
    }

    /// ``isExpired(at:skew:)`` with the skew in seconds.
    package func isExpired(at now: Date, skewSeconds: Double) -> Bool {
        guard let expiresAt else { return false }
        var margin = skewSeconds
        if let issuedAt, margin > 0 {
            margin = min(margin, max(0, expiresAt.timeIntervalSince(issuedAt)) / 2)
        }
        return expiresAt.timeIntervalSince(now) <= margin
    }
}

extension AccessToken: CustomStringConvertible {
    public var description: String {
        var parts = ["\(tokenType) \(accessToken.redacted)"]
        if let expiresAt { parts.append("expires \(expiresAt.timeIntervalSince1970)") }
        parts.append(refreshToken == nil ? "no refresh token" : "refresh token \(refreshToken?.redacted ?? "")")
        if !scopes.isEmpty { parts.append("scopes \(scopes.joined(separator: " "))") }
        return "AccessToken(\(parts.joined(separator: ", ")))"
    }
}

extension AccessToken: CustomReflectable {
    /// What `dump` and debuggers show: the metadata of ``description``, never
    /// the tokens or the extra fields (an `id_token` is a credential too).
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "tokenType": tokenType,
                "expiresAt": expiresAt as Any,
                "issuedAt": issuedAt as Any,
                "scopes": scopes,
                "hasRefreshToken": refreshToken != nil,
                "binding": binding as Any,
                "grant": grant as Any,
                "idToken": idToken as Any,
                "unverifiedIDToken": unverifiedIDToken as Any,
                "dpopKey": dpopKey as Any,
                "certificateThumbprint": certificateThumbprint as Any,
            ], displayStyle: .struct)
    }
}
