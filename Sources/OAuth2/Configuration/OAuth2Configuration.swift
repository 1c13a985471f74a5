#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// What the client knows of its provider and of itself: endpoints, client
/// credentials, how it authenticates, and its policies.
///
/// One configuration is shared by every ``OAuth2Client`` of an app. Endpoints
/// must be `https` except for loopback hosts; ``validate()`` (run by the
/// initializer and again by the client) throws `insecure_endpoint` otherwise.
public struct OAuth2Configuration: Sendable {
    /// The client identifier the provider issued.
    public var clientID: String
    /// The client secret of a confidential client; `nil` for a public client.
    /// Kept opaque: its description shows nothing of it (``Secret/opaque(_:)``).
    public var clientSecret: Secret? {
        didSet { clientSecret = clientSecret?.opaque }
    }
    /// The authorization endpoint, for the user-agent (authorization code) flow.
    public var authorizationEndpoint: URL?
    /// The token endpoint.
    public var tokenEndpoint: URL
    /// The revocation endpoint (RFC 7009), when the provider has one.
    public var revocationEndpoint: URL?
    /// The device authorization endpoint (RFC 8628), when the provider has one.
    public var deviceAuthorizationEndpoint: URL?
    /// Scopes requested when a call names none.
    public var defaultScopes: [String]
    /// How the client authenticates to the token endpoint; `client_secret_basic` by default,
    /// `none` whenever there is no secret.
    public var clientAuthentication: ClientAuthentication
    /// How long before its expiry a token is refreshed before use. 60 seconds
    /// by default, and at most half the token's lifetime (see ``AccessToken/isExpired(at:skew:)``).
    public var expirySkew: Duration
    /// Whether the resource owner password grant may be used. Off by default: it is deprecated (RFC 9700 §2.4).
    public var allowsPasswordGrant: Bool
    /// The authorization server's issuer identifier; when set, a redirect's `iss` (RFC 9207) must equal it.
    public var issuer: String?
    /// Whether a redirect must carry `iss` (the provider's metadata says
    /// `authorization_response_iss_parameter_supported`).
    public var requiresIssuerInRedirect: Bool
    /// The largest response body accepted from the provider. 1 MiB by default.
    public var maxResponseSize: Int
    /// The longest a request to the provider may take. 30 seconds by default.
    /// Also bounds the wait for another process's refresh of the same account
    /// (the store's account lock).
    public var requestTimeout: Duration
    /// The assertion grant the client can run again when its token expires
    /// (a JWT-bearer service account); `nil` by default.
    public var assertionGrant: AssertionGrant?

    /// Creates a configuration and checks its endpoints.
    ///
    /// - Throws: ``OAuth2Error`` `insecure_endpoint` when an endpoint is not
    ///   `https` (and not loopback), `invalid_configuration` when the client id
    ///   is empty or a secret-based method has no secret.
    public init(
        clientID: String,
        clientSecret: Secret? = nil,
        authorizationEndpoint: URL? = nil,
        tokenEndpoint: URL,
        revocationEndpoint: URL? = nil,
        deviceAuthorizationEndpoint: URL? = nil,
        defaultScopes: [String] = [],
        clientAuthentication: ClientAuthentication? = nil,
        expirySkew: Duration = .seconds(60),
        allowsPasswordGrant: Bool = false,
        issuer: String? = nil,
        requiresIssuerInRedirect: Bool = false,
        maxResponseSize: Int = 1 << 20,
        requestTimeout: Duration = .seconds(30),
        assertionGrant: AssertionGrant? = nil
    ) throws(OAuth2Error) {
        self.clientID = clientID
        self.clientSecret = clientSecret?.opaque
        self.authorizationEndpoint = authorizationEndpoint
        self.tokenEndpoint = tokenEndpoint
        self.revocationEndpoint = revocationEndpoint
        self.deviceAuthorizationEndpoint = deviceAuthorizationEndpoint
        self.defaultScopes = defaultScopes
        self.clientAuthentication = clientAuthentication ?? (clientSecret == nil ? .none : .clientSecretBasic)
        self.expirySkew = expirySkew
        self.allowsPasswordGrant = allowsPasswordGrant
        self.issuer = issuer
        self.requiresIssuerInRedirect = requiresIssuerInRedirect
        self.maxResponseSize = maxResponseSize
        self.requestTimeout = requestTimeout
        self.assertionGrant = assertionGrant
        try validate()
    }

    /// Checks the endpoints and credentials.
    ///
    /// - Throws: ``OAuth2Error`` `insecure_endpoint` or `invalid_configuration`.
    public func validate() throws(OAuth2Error) {
        guard !clientID.isEmpty else {
            throw OAuth2Error(code: .invalidConfiguration, message: "the client id is empty")
        }
        try EndpointPolicy.requireSecure(tokenEndpoint, role: "token endpoint")
        if let authorizationEndpoint {
            // The authorize URL carries no secret, but a downgraded one lets an
            // attacker swap the login page; hold it to the same rule.
            try EndpointPolicy.requireSecure(authorizationEndpoint, role: "authorization endpoint")
        }
        if let revocationEndpoint {
            try EndpointPolicy.requireSecure(revocationEndpoint, role: "revocation endpoint")
        }
        if let deviceAuthorizationEndpoint {
            try EndpointPolicy.requireSecure(deviceAuthorizationEndpoint, role: "device authorization endpoint")
        }
        if clientAuthentication != .none && (clientSecret?.isEmpty ?? true) {
            throw OAuth2Error(
                code: .invalidConfiguration,
                message: "client authentication \(clientAuthentication) needs a client secret"
            )
        }
        if let assertionGrant, !assertionGrant.type.contains(":") {
            throw OAuth2Error(code: .invalidConfiguration, message: "an assertion grant's type must be an absolute URI")
        }
        guard maxResponseSize > 0, expirySkew >= .zero, requestTimeout > .zero else {
            throw OAuth2Error(code: .invalidConfiguration, message: "limits must be positive")
        }
    }
}

extension OAuth2Configuration {
    /// The grant types whose tokens the client can renew by running the grant
    /// again: client credentials for a confidential client, and the assertion
    /// grant when the configuration can make assertions.
    var renewableGrantTypes: Set<String> {
        var types: Set<String> = []
        if clientAuthentication != .none { types.insert(TokenGrant.clientCredentialsType) }
        if let assertionGrant { types.insert(assertionGrant.type) }
        return types
    }
}
