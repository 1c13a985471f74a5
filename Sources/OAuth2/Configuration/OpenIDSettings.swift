#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// How the client verifies OpenID Connect ID tokens and where the
/// provider's other OpenID endpoints are (``OAuth2Configuration/openID``).
///
/// With these settings, an authorization request whose scopes include
/// `openid` carries a fresh `nonce`, its token response must carry an ID
/// token, and every ID token the provider sends (at sign-in and on refresh)
/// is verified before the token is used: its JWS signature against the
/// provider's key set (``jwksURI``) with an algorithm of ``signingAlgorithms``,
/// `iss` equal to the configuration's ``OAuth2Configuration/issuer``, `aud`
/// containing the client id (and `azp` the client when there are several
/// audiences), `exp`, `iat` and `nbf` within ``clockLeeway``, the `nonce`,
/// and `at_hash` when present. A refreshed ID token must name the same
/// issuer, subject and audience (OpenID Connect Core §12.2). Discovery fills these in
/// (``OAuth2Configuration/discover(issuer:clientID:clientSecret:transport:cache:clientCertificate:issuerRule:)``).
///
/// A refresh's ID token comes in the response that rotates the refresh
/// token, so its verification never costs the grant: the new tokens are
/// always stored (``AccessToken/unverifiedIDToken``).
/// - When it cannot be verified **at that moment** (the key set is down or
///   does not have its key yet, or the clocks disagree by more than
///   ``clockLeeway``) and its claims, read without the signature, name the
///   signed-in issuer, subject and audience, the new tokens are used and the
///   sign-in's verified claims kept. The delegate hears
///   `didDeferIDTokenVerificationWithError` (the event
///   ``OAuth2Event/deferredIDTokenVerification(_:)``), and the ID token is
///   verified again by ``OAuth2Client/idToken()`` and by the next refresh,
///   against the times as they stood when it came.
/// - When it is **refused** (another issuer, subject or audience, a bad
///   signature, a malformed token), that is a security signal: the new
///   tokens are kept only so that a logout can revoke them, and never act as
///   the signed-in user. Every request of the account, and every refresh,
///   fails with the refusal's code (`subject_mismatch`, `invalid_signature`, …)
///   without contacting the provider, until the user signs in again or logs out.
public struct OpenIDSettings: Sendable, Hashable {
    /// The provider's JSON Web Key Set (`jwks_uri`).
    public var jwksURI: URL
    /// The userinfo endpoint, when the provider has one.
    public var userinfoEndpoint: URL?
    /// The RP-initiated logout endpoint (`end_session_endpoint`), when the provider has one.
    public var endSessionEndpoint: URL?
    /// The JWS algorithms an ID token may be signed with. Only public-key
    /// algorithms are honoured: `none` and HMAC are always refused.
    public var signingAlgorithms: Set<JWSAlgorithm>
    /// How far the clocks of the provider and the client may disagree when
    /// `exp`, `iat` and `nbf` are checked. 60 seconds by default.
    public var clockLeeway: Duration
    /// The longest ID token accepted, in bytes. 64 KiB by default.
    public var maxIDTokenSize: Int
    /// How long a fetched key set is used before it is fetched again. 10 minutes by default.
    public var keySetMaxAge: Duration
    /// The shortest time between two fetches of the key set caused by a key
    /// it does not have (a rotation at the provider, or a forged token).
    /// 30 seconds by default: a stream of tokens with unknown `kid`s costs the
    /// provider at most one request per interval.
    public var keySetRefetchInterval: Duration
    /// The hosted domains (Google's `hd` claim: the Google Workspace domain of
    /// the user's account) whose users may sign in, compared without regard to
    /// case; `nil` (the default) for any account. With a set, an ID token
    /// without `hd` (a consumer account) or with another domain is refused
    /// (`hosted_domain_mismatch`). Google documents `hd` as the claim to check:
    /// an email address's domain is not proof of the account's organisation.
    public var allowedHostedDomains: Set<String>? = nil
    /// Claims providers besides this provider whose aggregated and
    /// distributed claims are trusted (OpenID Connect Core §5.6.2); none by
    /// default: then only claims signed with this provider's own keys are.
    public var claimsProviders: [ClaimsProvider] = []

    /// Creates settings.
    public init(
        jwksURI: URL,
        userinfoEndpoint: URL? = nil,
        endSessionEndpoint: URL? = nil,
        signingAlgorithms: Set<JWSAlgorithm> = [.rs256],
        clockLeeway: Duration = .seconds(60),
        maxIDTokenSize: Int = 64 * 1024,
        keySetMaxAge: Duration = .seconds(600),
        keySetRefetchInterval: Duration = .seconds(30)
    ) {
        self.jwksURI = jwksURI
        self.userinfoEndpoint = userinfoEndpoint
        self.endSessionEndpoint = endSessionEndpoint
        self.signingAlgorithms = signingAlgorithms
        self.clockLeeway = clockLeeway
        self.maxIDTokenSize = maxIDTokenSize
        self.keySetMaxAge = keySetMaxAge
        self.keySetRefetchInterval = keySetRefetchInterval
    }

    /// The settings an OpenID provider's metadata describes, or `nil` when it
    /// names no `jwks_uri`. The algorithms are those it lists that the client
    /// supports and that use a public key (RS256 when it lists none, the
    /// default of OpenID Connect Discovery §3).
    public init?(metadata: AuthorizationServerMetadata) {
        guard let jwksURI = metadata.jwksURI else { return nil }
        var algorithms = Set(metadata.idTokenSigningAlgValuesSupported.map(JWSAlgorithm.init(rawValue:)))
            .intersection(JWSAlgorithm.publicKeyAlgorithms)
        if algorithms.isEmpty { algorithms = [.rs256] }
        self.init(
            jwksURI: jwksURI,
            userinfoEndpoint: metadata.userinfoEndpoint,
            endSessionEndpoint: metadata.endSessionEndpoint,
            signingAlgorithms: algorithms
        )
    }

    /// Checks the endpoints and limits.
    ///
    /// - Throws: ``OAuth2Error`` `insecure_endpoint`, or `invalid_configuration`
    ///   when no allowed algorithm uses a public key or a limit is not positive.
    func validate() throws(OAuth2Error) {
        try EndpointPolicy.requireSecure(jwksURI, role: "JWKS endpoint")
        if let userinfoEndpoint { try EndpointPolicy.requireSecure(userinfoEndpoint, role: "userinfo endpoint") }
        if let endSessionEndpoint { try EndpointPolicy.requireSecure(endSessionEndpoint, role: "end-session endpoint") }
        guard !signingAlgorithms.intersection(JWSAlgorithm.publicKeyAlgorithms).isEmpty else {
            throw OAuth2Error(
                code: .invalidConfiguration, message: "OpenID Connect needs at least one public-key signing algorithm (RS256, ES256, …)")
        }
        if let allowedHostedDomains, allowedHostedDomains.contains(where: \.isEmpty) {
            throw OAuth2Error(code: .invalidConfiguration, message: "an allowed hosted domain is empty")
        }
        for provider in claimsProviders { try provider.validate() }
        guard clockLeeway >= .zero, maxIDTokenSize > 0, keySetMaxAge > .zero, keySetRefetchInterval >= .zero else {
            throw OAuth2Error(code: .invalidConfiguration, message: "OpenID Connect limits must be positive")
        }
    }
}

extension JWSAlgorithm {
    /// The algorithms an ID token may be verified with: those with a public key.
    static let publicKeyAlgorithms: Set<JWSAlgorithm> = [.rs256, .rs384, .rs512, .ps256, .ps384, .ps512, .es256, .es384, .es512, .edDSA]
}
