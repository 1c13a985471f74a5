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
    /// the client's own work per request (BENCHMARKS.md, issue 15, eighth
    /// pass). A copy now costs one retain.
    private var storage: Storage

    /// The access token sent as `Authorization: Bearer`.
    public var accessToken: Secret {
        get { storage.accessToken }
        set { uniqueStorage().accessToken = newValue }
    }
    /// The token type as the provider spelled it; only `Bearer` is used.
    public var tokenType: String {
        get { storage.tokenType }
        set { uniqueStorage().tokenType = newValue }
    }
    /// When the token expires, computed from the time the request was sent; `nil` when the provider did not say.
    public var expiresAt: Date? {
        get { storage.expiresAt }
        set { uniqueStorage().expiresAt = newValue }
    }
    /// When the token was requested: the start of its lifetime. `nil` for a
    /// token made by hand or stored before this was recorded.
    public var issuedAt: Date? {
        get { storage.issuedAt }
        set { uniqueStorage().issuedAt = newValue }
    }
    /// The refresh token, when the provider issued one.
    public var refreshToken: Secret? {
        get { storage.refreshToken }
        set { uniqueStorage().refreshToken = newValue }
    }
    /// The scopes granted: the provider's `scope` when it sent one, else those requested.
    public var scopes: [String] {
        get { storage.scopes }
        set { uniqueStorage().scopes = newValue }
    }
    /// The response's other fields, verbatim.
    public var extraFields: [String: JSONValue] {
        get { storage.extraFields }
        set { uniqueStorage().extraFields = newValue }
    }
    /// The provider and client the token was issued to; `nil` for a token
    /// stored before bindings existed (the client stamps it when it next saves).
    public var binding: TokenBinding? {
        get { storage.binding }
        set { uniqueStorage().binding = newValue }
    }
    /// The grant that obtained the token, when the client ran it; lets a
    /// token without a refresh token be renewed by running the grant again.
    public var grant: TokenGrant? {
        get { storage.grant }
        set { uniqueStorage().grant = newValue }
    }
    /// The verified claims of the OpenID Connect ID token that came with the
    /// token (or with the sign-in it was refreshed from); `nil` without OpenID Connect.
    /// The signed ID token itself is in ``extraFields`` as `id_token`.
    public var idToken: IDToken? {
        get { storage.idToken }
        set { uniqueStorage().idToken = newValue }
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
        storage = Storage(
            accessToken: accessToken, tokenType: tokenType, expiresAt: expiresAt, refreshToken: refreshToken, scopes: scopes,
            extraFields: extraFields, binding: binding, grant: grant, idToken: idToken)
    }

    /// The storage, copied first when another token shares it.
    private mutating func uniqueStorage() -> Storage {
        if !isKnownUniquelyReferenced(&storage) {
            storage = storage.copy()
        }
        return storage
    }

    /// The fields of one or more equal tokens.
    ///
    /// `@unchecked Sendable`: a storage is changed only through
    /// `uniqueStorage()`, by the one token that holds it, so a storage that
    /// two tokens (or two threads) can see is never written.
    private final class Storage: @unchecked Sendable {
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

        init(
            accessToken: Secret, tokenType: String, expiresAt: Date?, issuedAt: Date? = nil, refreshToken: Secret?,
            scopes: [String], extraFields: [String: JSONValue], binding: TokenBinding?, grant: TokenGrant?, idToken: IDToken?
        ) {
            self.accessToken = accessToken
            self.tokenType = tokenType
            self.expiresAt = expiresAt
            self.issuedAt = issuedAt
            self.refreshToken = refreshToken
            self.scopes = scopes
            self.extraFields = extraFields
            self.binding = binding
            self.grant = grant
            self.idToken = idToken
        }

        func copy() -> Storage {
            Storage(
                accessToken: accessToken, tokenType: tokenType, expiresAt: expiresAt, issuedAt: issuedAt,
                refreshToken: refreshToken, scopes: scopes, extraFields: extraFields, binding: binding, grant: grant,
                idToken: idToken)
        }
    }

    // MARK: Equatable, Hashable, Codable: field by field, as synthesized for the stored fields they were

    public static func == (lhs: AccessToken, rhs: AccessToken) -> Bool {
        if lhs.storage === rhs.storage { return true }
        return lhs.accessToken == rhs.accessToken && lhs.tokenType == rhs.tokenType && lhs.expiresAt == rhs.expiresAt
            && lhs.issuedAt == rhs.issuedAt && lhs.refreshToken == rhs.refreshToken && lhs.scopes == rhs.scopes
            && lhs.extraFields == rhs.extraFields && lhs.binding == rhs.binding && lhs.grant == rhs.grant
            && lhs.idToken == rhs.idToken
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(accessToken)
        hasher.combine(tokenType)
        hasher.combine(expiresAt)
        hasher.combine(issuedAt)
        hasher.combine(refreshToken)
        hasher.combine(scopes)
        hasher.combine(extraFields)
        hasher.combine(binding)
        hasher.combine(grant)
        hasher.combine(idToken)
    }

    /// The stored form's keys: the fields' names, as the synthesized conformance had them.
    private enum CodingKeys: String, CodingKey {
        case accessToken, tokenType, expiresAt, issuedAt, refreshToken, scopes, extraFields, binding, grant, idToken
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        storage = Storage(
            accessToken: try container.decode(Secret.self, forKey: .accessToken),
            tokenType: try container.decode(String.self, forKey: .tokenType),
            expiresAt: try container.decodeIfPresent(Date.self, forKey: .expiresAt),
            issuedAt: try container.decodeIfPresent(Date.self, forKey: .issuedAt),
            refreshToken: try container.decodeIfPresent(Secret.self, forKey: .refreshToken),
            scopes: try container.decode([String].self, forKey: .scopes),
            extraFields: try container.decode([String: JSONValue].self, forKey: .extraFields),
            binding: try container.decodeIfPresent(TokenBinding.self, forKey: .binding),
            grant: try container.decodeIfPresent(TokenGrant.self, forKey: .grant),
            idToken: try container.decodeIfPresent(IDToken.self, forKey: .idToken))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(accessToken, forKey: .accessToken)
        try container.encode(tokenType, forKey: .tokenType)
        try container.encodeIfPresent(expiresAt, forKey: .expiresAt)
        try container.encodeIfPresent(issuedAt, forKey: .issuedAt)
        try container.encodeIfPresent(refreshToken, forKey: .refreshToken)
        try container.encode(scopes, forKey: .scopes)
        try container.encode(extraFields, forKey: .extraFields)
        try container.encodeIfPresent(binding, forKey: .binding)
        try container.encodeIfPresent(grant, forKey: .grant)
        try container.encodeIfPresent(idToken, forKey: .idToken)
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
        guard let expiresAt else { return false }
        var margin = skew.timeInterval
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
            ], displayStyle: .struct)
    }
}
