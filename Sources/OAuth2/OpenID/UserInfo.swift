#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What the OpenID Connect userinfo endpoint says about the signed-in user
/// (OpenID Connect Core 1.0 §5.3).
///
/// ``OAuth2Client/userInfo()`` returns it only when its `sub` is the
/// signed-in user's (the ID token's `sub`, §5.3.2). Its `description` shows the subject only.
///
/// Aggregated and distributed claims (§5.6.2) are resolved when asked for
/// (``OAuth2Client/userInfo(resolvingClaimSources:)``): a claim whose source
/// verified is then in ``claims`` like any other, ``claimSources`` says where
/// it came from, and ``unresolvedClaimSources`` says what could not be resolved and why.
public struct UserInfo: Sendable, Hashable, Codable {
    /// `sub`: the user's identifier at the issuer.
    public let subject: String
    /// Every claim of the answer, as the provider sent it (`_claim_names` and
    /// `_claim_sources` included), and the claims resolved from its claim
    /// sources, each of which replaces what the answer itself said of that claim.
    public private(set) var claims: [String: JSONValue]
    /// The claims resolved from a claim source, by claim name, and the source each came from.
    public private(set) var claimSources: [String: ClaimSource] = [:]
    /// The claim sources, or single claims of one, that were not resolved,
    /// and why (in source name order): their claims are not in ``claims``
    /// unless the answer itself had them.
    public private(set) var unresolvedClaimSources: [UnresolvedClaimSource] = []

    /// `email`, when the provider shares it.
    public var email: String? { claims["email"]?.stringValue }
    /// `name`, when the provider shares it.
    public var name: String? { claims["name"]?.stringValue }
    /// `preferred_username`, when the provider shares it; not unique, not stable.
    public var preferredUsername: String? { claims["preferred_username"]?.stringValue }

    /// Reads a userinfo answer's claims.
    ///
    /// - Throws: ``OAuth2Error`` `invalid_token_response` without a `sub` string.
    public init(claims: [String: JSONValue]) throws(OAuth2Error) {
        guard let subject = claims["sub"]?.stringValue, !subject.isEmpty else {
            throw OAuth2Error(code: .invalidTokenResponse, message: "the userinfo answer has no sub")
        }
        self.subject = subject
        self.claims = claims
    }

    /// What a claim source gave: its claims join ``claims``, each recorded in ``claimSources``.
    mutating func resolve(_ resolved: [String: JSONValue], from source: ClaimSource) {
        for (name, value) in resolved {
            claims[name] = value
            claimSources[name] = source
        }
    }

    /// Records a claim source, or some of its claims, that could not be resolved.
    mutating func record(_ unresolved: UnresolvedClaimSource) {
        unresolvedClaimSources.append(unresolved)
    }

    private enum CodingKeys: String, CodingKey {
        case subject, claims, claimSources, unresolvedClaimSources
    }

    /// Decodes a user, also as encoded before claim sources were resolved (subject and claims only).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        subject = try container.decode(String.self, forKey: .subject)
        claims = try container.decode([String: JSONValue].self, forKey: .claims)
        claimSources = try container.decodeIfPresent([String: ClaimSource].self, forKey: .claimSources) ?? [:]
        unresolvedClaimSources = try container.decodeIfPresent([UnresolvedClaimSource].self, forKey: .unresolvedClaimSources) ?? []
    }

    /// Parses the userinfo endpoint's answer: a JSON object, or, when the
    /// provider signs userinfo (`application/jwt`, OpenID Connect Core
    /// §5.3.2) and `signed` says how to verify it, a JWS whose claims are read
    /// once its signature is verified.
    ///
    /// A signed answer is verified as an ID token's signature is: against the
    /// provider's key set, with an algorithm the ID tokens may use (public
    /// keys only; `none` and HMAC are refused). Its `iss`, when present, must
    /// be the issuer, and its `aud`, when present, must name the client (the
    /// claims §5.3.2 says a signed answer should carry). An encrypted answer
    /// (a JWE) is refused, as is a JWT when `signed` is `nil`.
    ///
    /// - Throws: ``OAuth2Error``: the status errors of the provider's answers
    ///   (`http_error`, `rate_limited`, `unexpected_redirect`, …);
    ///   `invalid_token_response` for a body that is not a JSON object with a
    ///   `sub`, an encrypted answer, or a JWT that cannot be verified here; for
    ///   a signed answer, the JWS's errors (`invalid_jwt`,
    ///   `unsupported_algorithm`, `invalid_signature`, `unknown_signing_key`,
    ///   the key set's fetch errors), `issuer_mismatch` and `audience_mismatch`.
    static func parse(
        _ response: HTTPTransportResponse, maxBodySize: Int, now: Date, signed: SignedClaimsVerification?
    ) async throws(OAuth2Error) -> UserInfo {
        let endpoint = "userinfo endpoint"
        try ProviderResponse.requireSuccess(response, endpoint: endpoint, maxBodySize: maxBodySize, now: now)
        guard let type = response.headers[.contentType], type.lowercased().hasPrefix("application/jwt") else {
            return try UserInfo(claims: ProviderResponse.object(of: response, endpoint: endpoint))
        }
        let text = String(decoding: response.body, as: UTF8.self).trimmingSurroundingWhitespace
        guard let signed, text.utf8.count(where: { $0 == UInt8(ascii: ".") }) == 2 else {
            throw OAuth2Error(
                code: .invalidTokenResponse,
                message: signed == nil
                    ? "the userinfo endpoint answered with a JWT, and the configuration has no key set to verify it with"
                    : "the userinfo endpoint answered with an encrypted JWT, which this client does not read",
                httpStatus: response.status.code
            )
        }
        return try await signed.verify(String(text), maxSize: maxBodySize)
    }
}

/// How signed claims are verified: a userinfo answer with the provider's
/// key set, and the JWT of a claim source with the key set of the provider
/// trusted for it; the algorithms allowed, and whose claims they must be.
struct SignedClaimsVerification: Sendable {
    let keys: KeySetCache
    let allowedAlgorithms: Set<JWSAlgorithm>
    let issuer: String
    let clientID: String

    /// The claims of a signed userinfo answer, once its signature, `iss` and `aud` are checked.
    func verify(_ text: String, maxSize: Int) async throws(OAuth2Error) -> UserInfo {
        try UserInfo(claims: try await verifiedClaims(try CompactJWS(text, maxSize: maxSize), of: "the signed userinfo answer"))
    }

    /// The claims of a JWS, once its signature is verified with ``keys`` and
    /// an algorithm of ``allowedAlgorithms``, its `iss` (when present) is
    /// ``issuer`` and its `aud` (when present) names ``clientID``.
    ///
    /// - Parameter what: what the JWS is, for the errors' messages.
    func verifiedClaims(_ jws: CompactJWS, of what: String) async throws(OAuth2Error) -> [String: JSONValue] {
        _ = try await keys.verify(jws, allowedAlgorithms: allowedAlgorithms)
        let claims = try jws.payloadObject()
        if let iss = claims["iss"], iss.stringValue != issuer {
            throw OAuth2Error(code: .issuerMismatch, message: "\(what)'s iss is not the expected issuer \(issuer)")
        }
        if let aud = claims["aud"] {
            let audience: [String]
            switch aud {
            case .string(let one): audience = [one]
            case .array(let many): audience = many.compactMap(\.stringValue)
            default: audience = []
            }
            guard audience.contains(clientID) else {
                throw OAuth2Error(code: .audienceMismatch, message: "\(what)'s aud does not contain this client's id")
            }
        }
        return claims
    }
}

extension UserInfo: CustomStringConvertible {
    /// The subject; never the other claims.
    public var description: String { "UserInfo(sub \(subject))" }
}

/// Builds the OpenID Connect RP-initiated logout URL (OpenID Connect
/// RP-Initiated Logout 1.0 §2).
enum EndSessionRequest {
    /// The end-session endpoint with `id_token_hint`, `client_id`,
    /// `post_logout_redirect_uri` and `state` when given, and then
    /// `additionalParameters` (none may repeat those).
    ///
    /// - Throws: `invalid_configuration` when a parameter would be set twice
    ///   or the URL cannot be built.
    static func url(
        endpoint: URL,
        idTokenHint: Secret?,
        clientID: String,
        postLogoutRedirectURI: URL?,
        state: String?,
        additionalParameters: [(String, String)]
    ) throws(OAuth2Error) -> URL {
        var parameters: [(String, String)] = []
        if let idTokenHint { parameters.append(("id_token_hint", idTokenHint.value)) }
        parameters.append(("client_id", clientID))
        if let postLogoutRedirectURI { parameters.append(("post_logout_redirect_uri", postLogoutRedirectURI.absoluteString)) }
        if let state { parameters.append(("state", state)) }
        var names = Set(parameters.map(\.0))
        for (name, _) in additionalParameters where name.isEmpty || !names.insert(name).inserted {
            throw OAuth2Error(code: .invalidConfiguration, message: "the end-session parameter \(name) is empty or set twice")
        }
        parameters += additionalParameters
        let text = endpoint.absoluteString
        guard let parts = URLParts(text[...]),
            let url = URL(string: FormURLEncoding.appendingQuery(parameters, to: text, existingQuery: parts.query))
        else {
            throw OAuth2Error(code: .invalidConfiguration, message: "the end-session URL could not be built")
        }
        return url
    }
}
