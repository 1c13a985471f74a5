#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// Where a resolved aggregated or distributed claim came from (OpenID
/// Connect Core 1.0 §5.6.2): ``UserInfo/claimSources``.
public struct ClaimSource: Sendable, Hashable, Codable {
    /// The source's name in the answer's `_claim_sources` (`src1`).
    public let name: String
    /// Whose keys verified the source's JWT: the OpenID provider's issuer, or
    /// a ``ClaimsProvider/issuer`` the app named.
    public let issuer: String
    /// The claims endpoint it was fetched from (a distributed claim); `nil`
    /// for an aggregated claim, whose JWT came in the answer.
    public let endpoint: URL?

    /// Creates a record of a source.
    public init(name: String, issuer: String, endpoint: URL?) {
        self.name = name
        self.issuer = issuer
        self.endpoint = endpoint
    }
}

/// A claim source of a userinfo answer, or some of its claims, that was not
/// resolved, and why: ``UserInfo/unresolvedClaimSources``.
///
/// Nothing of such a source is in ``UserInfo/claims``: a source that is not
/// trusted, does not verify, or cannot be fetched costs its own claims only.
public struct UnresolvedClaimSource: Sendable, Hashable, Codable {
    /// The source's name in `_claim_sources`, as `_claim_names` gave it.
    public let source: String
    /// The claims that were not resolved, sorted.
    public let claims: [String]
    /// Why: ``OAuth2Error/Code/untrustedClaimSource``,
    /// ``OAuth2Error/Code/invalidClaimSource``, `insecure_endpoint`, or the
    /// code of the verification (`invalid_signature`, `unsupported_algorithm`,
    /// `issuer_mismatch`, `subject_mismatch` for the provider's JWT about
    /// another user, …) or of the fetch (`http_error`, `timeout`, …).
    public let code: OAuth2Error.Code
    /// What went wrong, free of secrets (never the source's access token).
    public let message: String

    /// Creates a record of a failure.
    public init(source: String, claims: [String], code: OAuth2Error.Code, message: String) {
        self.source = source
        self.claims = claims.sorted()
        self.code = code
        self.message = message
    }

    /// The failure as an error, for code that handles errors.
    public var error: OAuth2Error { OAuth2Error(code: code, message: message) }

    private enum CodingKeys: String, CodingKey {
        case source, claims, code, message
    }

    /// Decodes a record.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            source: try container.decode(String.self, forKey: .source),
            claims: try container.decode([String].self, forKey: .claims),
            code: OAuth2Error.Code(rawValue: try container.decode(String.self, forKey: .code)),
            message: try container.decode(String.self, forKey: .message)
        )
    }

    /// Encodes the record, its code as its wire form.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(source, forKey: .source)
        try container.encode(claims, forKey: .claims)
        try container.encode(code.rawValue, forKey: .code)
        try container.encode(message, forKey: .message)
    }
}
