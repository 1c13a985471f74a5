/// Which `iss` values name the configured issuer (``OAuth2Configuration/issuer``):
/// a provider's quirk as data, read by discovery, the redirect's `iss`
/// check (RFC 9207) and ID token verification alike, never a provider's name.
///
/// - ``exact``, the default and OpenID Connect's rule: `iss` is the issuer,
///   character for character.
/// - ``anyOf(_:)``: the issuer or one of a few other spellings of it. Google
///   documents that its ID tokens' `iss` is `https://accounts.google.com` or
///   `accounts.google.com`: `.anyOf(["accounts.google.com"])` with the issuer
///   `https://accounts.google.com`. Every other spelling is refused.
/// - ``template(placeholder:claim:allowed:)``: the issuer is a template, as
///   the discovery documents of Microsoft Entra ID's multi-tenant endpoints
///   (`common`, `organizations`, `consumers`) name it:
///   `https://login.microsoftonline.com/{tenantid}/v2.0`. An ID token's `iss`
///   must be the template with the placeholder replaced by the token's own
///   tenant claim (`tid`), a GUID, as Microsoft's libraries check it; with
///   `allowed`, that tenant must also be one of the app's.
///
/// ```swift
/// let configuration = try await OAuth2Configuration.discover(
///     issuer: "https://login.microsoftonline.com/common/v2.0", clientID: clientID,
///     transport: transport, issuerRule: .template(placeholder: "{tenantid}", claim: "tid"))
/// ```
public struct IssuerRule: Sendable, Hashable {
    enum Kind: Sendable, Hashable {
        case exact
        case anyOf([String])
        case template(placeholder: String, claim: String, allowed: Set<String>?)
    }

    let kind: Kind

    /// `iss` must be the configured issuer exactly (OpenID Connect Core §3.1.3.7).
    public static let exact = IssuerRule(kind: .exact)

    /// `iss` must be the configured issuer or one of `alternatives`, each
    /// compared exactly. Tokens of one user that name different spellings
    /// are the same sign-in (a refresh may switch spelling).
    public static func anyOf(_ alternatives: [String]) -> IssuerRule {
        IssuerRule(kind: .anyOf(alternatives))
    }

    /// The configured issuer is a template in which `placeholder` stands for
    /// a tenant: an ID token's `claim` must be a GUID (8-4-4-4-12 hex digits),
    /// and its `iss` the template with `placeholder` replaced by it.
    ///
    /// Discovery accepts a document whose `issuer` is the template when the
    /// URL it was fetched for is the template with one path segment in the
    /// placeholder's place (`common`, `organizations`, …); the configuration's
    /// issuer is then the template.
    ///
    /// - Parameters:
    ///   - placeholder: the text that stands for the tenant, such as `{tenantid}`.
    ///   - claim: the ID token claim that names the tenant, such as `tid`.
    ///   - allowed: the tenants whose users may sign in (compared without
    ///     regard to case); `nil` (the default) for any tenant.
    public static func template(placeholder: String, claim: String, allowed: Set<String>? = nil) -> IssuerRule {
        IssuerRule(kind: .template(placeholder: placeholder, claim: claim, allowed: allowed.map { Set($0.map { $0.lowercased() }) }))
    }
}

extension IssuerRule: CustomStringConvertible {
    /// The rule's kind, with its spellings, placeholder and claim; the allowed tenants counted.
    public var description: String {
        switch kind {
        case .exact: "exact"
        case .anyOf(let alternatives): "anyOf(\(alternatives.joined(separator: ", ")))"
        case .template(let placeholder, let claim, let allowed):
            "template(\(placeholder), claim \(claim)\(allowed.map { ", \($0.count) allowed" } ?? ""))"
        }
    }
}

extension IssuerRule {
    /// Checks the rule against the configured issuer.
    ///
    /// - Throws: ``OAuth2Error`` `invalid_configuration` for a rule without an
    ///   issuer, an empty spelling, placeholder or claim, an allowed tenant that
    ///   is not a GUID, or a template issuer with the placeholder more than once.
    func validate(issuer: String?) throws(OAuth2Error) {
        func invalid(_ message: String) -> OAuth2Error { OAuth2Error(code: .invalidConfiguration, message: message) }
        switch kind {
        case .exact:
            return
        case .anyOf(let alternatives):
            guard issuer != nil else { throw invalid("an issuer rule anyOf needs the issuer (the configuration's issuer)") }
            guard !alternatives.contains(where: \.isEmpty) else { throw invalid("an issuer rule anyOf has an empty spelling") }
        case .template(let placeholder, let claim, let allowed):
            guard let issuer else { throw invalid("an issuer template needs the issuer (the configuration's issuer)") }
            guard !placeholder.isEmpty, !claim.isEmpty else { throw invalid("an issuer template needs a placeholder and a claim") }
            guard issuer.split(separator: placeholder, omittingEmptySubsequences: false).count <= 2 else {
                throw invalid("the issuer template has its placeholder more than once")
            }
            if let allowed, !allowed.allSatisfy(Self.isGUID) {
                throw invalid("an issuer template's allowed tenants must be GUIDs")
            }
        }
    }

    /// Whether a discovery document fetched for `requested` that names
    /// `documentIssuer` is the issuer's: the same string, or, for a template
    /// rule, the template with one path segment (`common`) in the placeholder's place.
    func acceptsMetadataIssuer(_ documentIssuer: String, requested: String) -> Bool {
        if documentIssuer == requested { return true }
        guard case .template(let placeholder, _, _) = kind, let filled = Self.filling(documentIssuer, placeholder, from: requested)
        else { return false }
        return !filled.isEmpty && filled.unicodeScalars.allSatisfy(Self.isSegmentCharacter)
    }

    /// Whether a redirect's `iss` (RFC 9207) names the configured issuer: for
    /// a template, the template with an allowed tenant's GUID in the placeholder's place.
    func acceptsRedirectIssuer(_ issuer: String, configured: String) -> Bool {
        switch kind {
        case .exact:
            return issuer == configured
        case .anyOf(let alternatives):
            return issuer == configured || alternatives.contains(issuer)
        case .template(let placeholder, _, let allowed):
            if issuer == configured { return true }
            guard let tenant = Self.filling(configured, placeholder, from: issuer), Self.isGUID(tenant) else { return false }
            return allowed.map { $0.contains(tenant.lowercased()) } ?? true
        }
    }

    /// Checks an ID token's `iss` against the configured issuer.
    ///
    /// - Throws: ``OAuth2Error`` `issuer_mismatch`: `iss` is not accepted, or
    ///   (template) the tenant claim is missing, not a GUID, or not allowed.
    ///   No message names a claim's value.
    func check(_ token: IDToken, configured issuer: String) throws(OAuth2Error) {
        try check(token.issuer, claims: token.claims, configured: issuer, of: "the ID token")
    }

    /// Checks the `iss` of a signed token of the provider's (an ID token, a
    /// logout token: OpenID Connect Back-Channel Logout §2.6 validates it as
    /// an ID token's) against the configured issuer; `what` names the token
    /// in the messages, as "the logout token".
    ///
    /// - Throws: as ``check(_:configured:)``.
    func check(_ tokenIssuer: String, claims: [String: JSONValue], configured issuer: String, of what: String) throws(OAuth2Error) {
        switch kind {
        case .exact:
            guard tokenIssuer == issuer else {
                throw OAuth2Error(code: .issuerMismatch, message: "\(what)'s iss is not the configured issuer \(issuer)")
            }
        case .anyOf(let alternatives):
            guard tokenIssuer == issuer || alternatives.contains(tokenIssuer) else {
                throw OAuth2Error(
                    code: .issuerMismatch,
                    message: "\(what)'s iss is neither the configured issuer \(issuer) nor another spelling of it")
            }
        case .template(let placeholder, let claim, let allowed):
            guard let tenant = claims[claim]?.stringValue, Self.isGUID(tenant) else {
                throw OAuth2Error(
                    code: .issuerMismatch,
                    message: "\(what) has no \(claim) claim that is a GUID, which the issuer template \(issuer) needs")
            }
            guard tokenIssuer == issuer.replacing(placeholder, with: tenant) else {
                throw OAuth2Error(
                    code: .issuerMismatch, message: "\(what)'s iss is not the issuer template \(issuer) filled with its \(claim)")
            }
            if let allowed, !allowed.contains(tenant.lowercased()) {
                throw OAuth2Error(code: .issuerMismatch, message: "\(what)'s \(claim) is not among the tenants this app allows")
            }
        }
    }

    /// Whether two ID tokens' `iss`, each accepted by ``check(_:configured:)``,
    /// name the same issuer (OpenID Connect Core §12.2): equal, or two of the
    /// spellings of ``anyOf(_:)``. A template's tokens name the same tenant only when equal.
    func sameIssuer(_ first: String, _ second: String, configured issuer: String) -> Bool {
        if first == second { return true }
        guard case .anyOf(let alternatives) = kind else { return false }
        let spellings = Set(alternatives + [issuer])
        return spellings.contains(first) && spellings.contains(second)
    }

    /// What stands in `template`'s placeholder to make `text`, or `nil` when
    /// the template has no placeholder or `text` is not of its form; compared
    /// byte for byte, as URLs are.
    static func filling(_ template: String, _ placeholder: String, from text: String) -> String? {
        let parts = template.split(separator: placeholder, maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2 else { return nil }
        let (prefix, suffix) = (parts[0].utf8, parts[1].utf8)
        let bytes = text.utf8
        guard bytes.count >= prefix.count + suffix.count, bytes.starts(with: prefix), bytes.reversed().starts(with: suffix.reversed())
        else { return nil }
        return String(decoding: bytes.dropFirst(prefix.count).dropLast(suffix.count), as: UTF8.self)
    }

    /// A character of a URL path segment that needs no escaping (RFC 3986
    /// `unreserved`): a tenant's name or id, never a `/`, `?`, `#` or `%`.
    static func isSegmentCharacter(_ scalar: Unicode.Scalar) -> Bool {
        scalar.isASCII && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) || "-._~".unicodeScalars.contains(scalar))
    }

    /// Whether `text` is a GUID: 8-4-4-4-12 hexadecimal digits.
    static func isGUID(_ text: String) -> Bool {
        let parts = text.utf8.split(separator: UInt8(ascii: "-"), omittingEmptySubsequences: false)
        return parts.map(\.count) == [8, 4, 4, 4, 12] && parts.allSatisfy { $0.allSatisfy(isHexDigit) }
    }

    private static func isHexDigit(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte) || (0x41...0x46).contains(byte) || (0x61...0x66).contains(byte)
    }
}
