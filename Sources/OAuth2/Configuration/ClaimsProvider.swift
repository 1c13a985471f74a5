#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// A claims provider other than the OpenID provider whose signed claims the
/// app trusts (OpenID Connect Core 1.0 §5.6.2): a bank vouching for a credit
/// score, an employer for a job title. ``OpenIDSettings/claimsProviders``.
///
/// By default only the OpenID provider's own keys make an aggregated or
/// distributed claim trusted (``OAuth2Client/userInfo(resolvingClaimSources:)``).
/// A provider named here adds its key set: a claims JWT whose `iss` is
/// ``issuer``, or any JWT served by an endpoint at one of ``endpointOrigins``,
/// is verified with ``jwksURI``'s keys and nothing else.
public struct ClaimsProvider: Sendable, Hashable {
    /// The provider's issuer identifier: a JWT naming it in `iss` is its claims, and one it serves must not name another.
    public var issuer: String
    /// The provider's JSON Web Key Set.
    public var jwksURI: URL
    /// The origins (scheme, host, port) of the provider's claims endpoints.
    /// A distributed claim there is fetched even on a private or loopback
    /// address (the app named it, a userinfo answer did not), and its JWT is
    /// verified with this provider's keys only.
    public var endpointOrigins: [URL]
    /// The JWS algorithms its claims may be signed with; public-key algorithms only.
    public var signingAlgorithms: Set<JWSAlgorithm>

    /// Creates a claims provider.
    public init(issuer: String, jwksURI: URL, endpointOrigins: [URL] = [], signingAlgorithms: Set<JWSAlgorithm> = [.rs256]) {
        self.issuer = issuer
        self.jwksURI = jwksURI
        self.endpointOrigins = endpointOrigins
        self.signingAlgorithms = signingAlgorithms
    }

    /// Whether `url` is at one of ``endpointOrigins``.
    func serves(_ url: URL) -> Bool {
        let origin = Origin(url)
        return endpointOrigins.contains { Origin($0) == origin }
    }

    /// Checks the URLs and algorithms.
    ///
    /// - Throws: ``OAuth2Error`` `insecure_endpoint` for a key set or origin
    ///   that is not `https` (or loopback `http`); `invalid_configuration`
    ///   for an empty issuer or no public-key algorithm.
    func validate() throws(OAuth2Error) {
        guard !issuer.isEmpty else {
            throw OAuth2Error(code: .invalidConfiguration, message: "a claims provider's issuer is empty")
        }
        try EndpointPolicy.requireSecure(jwksURI, role: "claims provider's JWKS endpoint")
        for origin in endpointOrigins { try EndpointPolicy.requireSecure(origin, role: "claims provider's endpoint origin") }
        guard !signingAlgorithms.intersection(JWSAlgorithm.publicKeyAlgorithms).isEmpty else {
            throw OAuth2Error(
                code: .invalidConfiguration, message: "a claims provider needs at least one public-key signing algorithm (RS256, ES256, …)")
        }
    }
}
