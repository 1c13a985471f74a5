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
    /// A client secret the library signs itself (a JWT, Sign in with Apple's
    /// client secret), sent as ``clientSecret`` would be and renewed before it
    /// expires; `nil` (the default) for none. Set it instead of ``clientSecret``.
    public var signedClientSecret: SignedClientSecret?
    /// The authorization endpoint, for the user-agent (authorization code) flow.
    public var authorizationEndpoint: URL?
    /// How the provider returns the authorization response (`response_mode`);
    /// `nil` (the default) sends none, and the response comes in the
    /// redirect's query. ``ResponseMode/formPost`` for Sign in with Apple.
    public var responseMode: ResponseMode?
    /// The token endpoint.
    public var tokenEndpoint: URL
    /// The revocation endpoint (RFC 7009), when the provider has one.
    public var revocationEndpoint: URL?
    /// The device authorization endpoint (RFC 8628), when the provider has one.
    public var deviceAuthorizationEndpoint: URL?
    /// Scopes requested when a call names none.
    public var defaultScopes: [String]
    /// How the client authenticates to the token endpoint; `client_secret_basic` by default,
    /// `client_secret_post` with a ``signedClientSecret``, `none` whenever there is no secret.
    public var clientAuthentication: ClientAuthentication
    /// How long before its expiry a token is refreshed before use. 60 seconds
    /// by default, and at most half the token's lifetime (see ``AccessToken/isExpired(at:skew:)``).
    public var expirySkew: Duration
    /// Whether the resource owner password grant may be used. Off by default: it is deprecated (RFC 9700 §2.4).
    public var allowsPasswordGrant: Bool
    /// The authorization server's issuer identifier; when set, a redirect's `iss` (RFC 9207) must equal it
    /// (or be accepted by ``issuerRule``).
    public var issuer: String?
    /// Which `iss` values name ``issuer``, in discovery, in a redirect and in
    /// ID tokens: ``IssuerRule/exact`` (the default), another spelling
    /// (``IssuerRule/anyOf(_:)``, Google) or a tenant template
    /// (``IssuerRule/template(placeholder:claim:allowed:)``, Microsoft Entra
    /// ID's multi-tenant endpoints).
    public var issuerRule: IssuerRule = .exact
    /// Whether a redirect must carry `iss` (the provider's metadata says
    /// `authorization_response_iss_parameter_supported`). Needs ``issuer``.
    public var requiresIssuerInRedirect: Bool
    /// The largest response body accepted from the provider. 1 MiB by default.
    public var maxResponseSize: Int
    /// The longest a request to the provider may take. 30 seconds by default.
    /// Also bounds the wait for another process's refresh of the same account
    /// (the store's account lock): six times this and 5 s, as long as a
    /// refresh that is making progress can take.
    public var requestTimeout: Duration
    /// The assertion grant the client can run again when its token expires
    /// (a JWT-bearer service account); `nil` by default.
    public var assertionGrant: AssertionGrant?
    /// OpenID Connect: how ID tokens are verified, and the userinfo and
    /// logout endpoints; `nil` when the provider is used for OAuth only.
    /// Needs ``issuer``. Discovery sets it for an OpenID provider.
    public var openID: OpenIDSettings?
    /// The resources (RFC 8707 `resource`) the tokens are for, each an
    /// absolute URI without fragment; sent on the authorization request and on
    /// every token and device authorization request. Empty by default.
    public var resources: [URL]
    /// The one resource every token of this configuration is for (its
    /// audience), recorded in the tokens' ``TokenBinding/resource``: a
    /// ``SigningTransport`` sends them only to URLs of that resource (the same
    /// origin, under its path) and refuses others with `resource_mismatch`, and
    /// a stored token recording another resource is never used. `nil` (the
    /// default): tokens record none and go wherever the app sends them, as before.
    /// ``ProtectedResourceClient`` sets it, with ``resources`` `[resource]`.
    public var boundResource: URL?
    /// An `audience` parameter for providers that want one (Auth0, some
    /// others) on the authorization and token requests; `nil` by default.
    public var audience: String?
    /// More parameters for every token request (a name may repeat); none may
    /// be one the client sets itself (`grant_type`, `code`, `scope`, `client_id`, …).
    public var additionalTokenParameters: [(String, String)]
    /// The key of `private_key_jwt` client authentication (RFC 7523 §2.2):
    /// the client signs an assertion with it for every request that authenticates it.
    public var clientAssertionKey: JWTSigningKey?
    /// The `aud` of the client's assertions (`private_key_jwt`,
    /// `client_secret_jwt`); the token endpoint's URL when `nil`.
    public var clientAssertionAudience: String?
    /// Binds the tokens of new grants to a DPoP key (RFC 9449); `nil` (the
    /// default): bearer tokens. See ``DPoPSettings``.
    public var dpop: DPoPSettings?
    /// The client certificate for mutual TLS (RFC 8705); `nil` (the default) for none.
    ///
    /// Presented on every request to the provider (token, revocation,
    /// device authorization, and by ``OAuth2Client/send(_:)`` and its
    /// ``SigningTransport``s to resource servers, userinfo included): the
    /// client authenticates with it under ``ClientAuthentication/tlsClientAuth``
    /// and ``ClientAuthentication/selfSignedTLSClientAuth``, and the tokens
    /// obtained with it record its thumbprint (``AccessToken/certificateThumbprint``),
    /// so that they only ever go out with it. A configuration made from
    /// metadata with a certificate uses the metadata's `mtls_endpoint_aliases`.
    public var clientCertificate: ClientCertificate?
    /// Whether every request to the provider (token, revocation, userinfo,
    /// key set, …) and every ``OAuth2Client/send(_:)`` may connect only to
    /// public addresses, checked after DNS on each connection
    /// (``HTTPTransportRequest/connectsOnlyToPublicAddresses``); `false`
    /// (the default) connects wherever the hosts resolve to. A
    /// ``ProtectedResourceClient`` sets it from its
    /// ``DiscoveryRules/connectsOnlyToPublicAddresses``.
    public var connectsOnlyToPublicAddresses = false
    /// Whether a token stored before tokens recorded their provider (one
    /// without a ``AccessToken/binding``) is taken to be this configuration's,
    /// and stamped with its binding. Off by default: such a token may have
    /// been issued by any provider that shared the store under the account's
    /// name, and adopting it would send its access token to this provider's
    /// resources and its refresh token to this token endpoint. Turn it on,
    /// for the configuration that issued those tokens only, to migrate them;
    /// without it they are refused (`provider_mismatch`) and never sent. A
    /// store that does not outlive the process (``TokenStore/isPersistent``,
    /// ``InMemoryTokenStore``) holds no such token, and its tokens are adopted.
    public var adoptsTokensStoredWithoutBinding: Bool = false
    /// The PKCE methods the provider's metadata lists (`code_challenge_methods_supported`);
    /// empty when it lists none or the configuration was not made from metadata.
    /// When not empty and without `S256`, the authorization code flow refuses
    /// to start: the client never sends `plain`, and such a provider might not
    /// check an `S256` challenge.
    package var codeChallengeMethodsSupported: [String] = []
    /// The pushed authorization request endpoint (RFC 9126); discovery sets it
    /// from the metadata's `pushed_authorization_request_endpoint`.
    public var pushedAuthorizationRequestEndpoint: URL?
    /// When authorization requests are pushed (RFC 9126): ``PushedAuthorization/automatic``
    /// (when the provider requires it) by default.
    public var pushedAuthorization: PushedAuthorization = .automatic
    /// Whether the provider accepts authorization requests only when pushed
    /// (its metadata's `require_pushed_authorization_requests`, RFC 9126 §5):
    /// ``PushedAuthorization/automatic`` then pushes, and ``PushedAuthorization/never`` is refused.
    public var requiresPushedAuthorizationRequests: Bool = false
    /// Whether the authorization request is sent as a request object (RFC 9101)
    /// signed with ``clientAssertionKey``: by value in the browser's URL, or
    /// inside the pushed request. Off by default.
    public var signsRequestObject: Bool = false
    /// Whether the provider accepts authorization requests only as signed
    /// request objects (its metadata's `require_signed_request_object`,
    /// RFC 9101 §10.5): the request is then signed whatever ``signsRequestObject`` says.
    public var requiresSignedRequestObject: Bool = false
    /// Whether the provider fetches a request object passed by reference
    /// (its metadata's `request_uri_parameter_supported`, OpenID Connect
    /// Discovery §3): when false, an authorization URL for a request object
    /// the app hosts is refused. True by default, as that section's default is.
    public var requestURIParameterSupported: Bool = true
    /// The algorithms the provider's metadata lists for request objects
    /// (`request_object_signing_alg_values_supported`); empty when it lists
    /// none. When not empty, a request object is signed only with an
    /// algorithm it lists.
    package var requestObjectSigningAlgValuesSupported: [String] = []
    /// A security profile whose client duties the configuration takes on, such
    /// as ``SecurityProfile/fapi2``; `nil` (the default) for none. Setting it
    /// turns on what it can (see ``SecurityProfile``), and ``validate()``
    /// refuses, naming the rule, whatever still breaks it.
    public var securityProfile: SecurityProfile? {
        didSet { if let securityProfile { takeOnDuties(of: securityProfile) } }
    }
    /// The DPoP proof algorithms the provider's metadata lists
    /// (`dpop_signing_alg_values_supported`); empty when it lists none or the
    /// configuration was not made from metadata. A new grant's key is made
    /// for one of them (``newDPoPKey()``).
    package var dpopSigningAlgValuesSupported: [JWSAlgorithm] = []

    /// Creates a configuration and checks its endpoints.
    ///
    /// - Throws: ``OAuth2Error`` `insecure_endpoint` when an endpoint is not
    ///   `https` (and not loopback), `invalid_configuration` when the client id
    ///   is empty, a secret-based method has no secret, or `iss` is required
    ///   in redirects without an `issuer` to compare it with.
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
        assertionGrant: AssertionGrant? = nil,
        openID: OpenIDSettings? = nil,
        resources: [URL] = [],
        audience: String? = nil,
        additionalTokenParameters: [(String, String)] = [],
        clientAssertionKey: JWTSigningKey? = nil,
        clientAssertionAudience: String? = nil,
        clientCertificate: ClientCertificate? = nil,
        signedClientSecret: SignedClientSecret? = nil
    ) throws(OAuth2Error) {
        self.clientID = clientID
        self.signedClientSecret = signedClientSecret
        self.clientSecret = clientSecret?.opaque
        self.authorizationEndpoint = authorizationEndpoint
        self.tokenEndpoint = tokenEndpoint
        self.revocationEndpoint = revocationEndpoint
        self.deviceAuthorizationEndpoint = deviceAuthorizationEndpoint
        self.defaultScopes = defaultScopes
        self.clientAuthentication =
            clientAuthentication
            ?? (clientAssertionKey != nil
                ? .privateKeyJWT
                : signedClientSecret != nil ? .clientSecretPost : clientSecret == nil ? .none : .clientSecretBasic)
        self.expirySkew = expirySkew
        self.allowsPasswordGrant = allowsPasswordGrant
        self.issuer = issuer
        self.requiresIssuerInRedirect = requiresIssuerInRedirect
        self.maxResponseSize = maxResponseSize
        self.requestTimeout = requestTimeout
        self.assertionGrant = assertionGrant
        self.openID = openID
        self.resources = resources
        self.audience = audience
        self.additionalTokenParameters = additionalTokenParameters
        self.clientAssertionKey = clientAssertionKey
        self.clientAssertionAudience = clientAssertionAudience
        self.clientCertificate = clientCertificate
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
        if let pushedAuthorizationRequestEndpoint {
            try EndpointPolicy.requireSecure(pushedAuthorizationRequestEndpoint, role: "pushed authorization request endpoint")
        }
        if pushedAuthorization == .never && requiresPushedAuthorizationRequests {
            throw OAuth2Error(
                code: .invalidConfiguration,
                message:
                    "the provider requires pushed authorization requests (require_pushed_authorization_requests, RFC 9126 §5): pushedAuthorization cannot be never"
            )
        }
        if pushedAuthorization == .always && pushedAuthorizationRequestEndpoint == nil && authorizationEndpoint != nil {
            throw OAuth2Error(
                code: .invalidConfiguration,
                message: "pushing authorization requests needs the pushed authorization request endpoint (RFC 9126 §2)"
            )
        }
        if signsRequestObject && clientAssertionKey == nil {
            throw OAuth2Error(
                code: .invalidConfiguration,
                message: "signing request objects (RFC 9101) needs the configuration's clientAssertionKey"
            )
        }
        if signedClientSecret != nil {
            guard clientSecret == nil else {
                throw OAuth2Error(
                    code: .invalidConfiguration, message: "a configuration has a client secret or a signed client secret, not both")
            }
            guard clientAuthentication == .clientSecretPost || clientAuthentication == .clientSecretBasic else {
                throw OAuth2Error(
                    code: .invalidConfiguration,
                    message: "a signed client secret is sent with client_secret_post or client_secret_basic, not \(clientAuthentication)")
            }
        } else if clientAuthentication.usesSecret && (clientSecret?.isEmpty ?? true) {
            throw OAuth2Error(
                code: .invalidConfiguration,
                message: "client authentication \(clientAuthentication) needs a client secret"
            )
        }
        if clientAuthentication == .clientSecretJWT, let clientSecret {
            // RFC 7518 §3.2: an HS256 key is at least as long as the hash.
            do throws(OAuth2Error) {
                _ = try JWTSigningKey.hmac(clientSecret)
            } catch {
                throw OAuth2Error(
                    code: .invalidConfiguration, message: "client_secret_jwt needs a client secret of at least 32 bytes (RFC 7518 §3.2)")
            }
        }
        if clientAuthentication == .privateKeyJWT {
            guard let key = clientAssertionKey, !key.algorithm.isSymmetric else {
                throw OAuth2Error(
                    code: .invalidConfiguration,
                    message: "client authentication private_key_jwt needs a private key (clientAssertionKey, RSA, EC or Ed25519)"
                )
            }
        }
        if clientAuthentication.usesCertificate && clientCertificate == nil {
            throw OAuth2Error(
                code: .invalidConfiguration,
                message: "client authentication \(clientAuthentication) needs a client certificate (the configuration's clientCertificate)")
        }
        if requiresIssuerInRedirect && issuer == nil {
            // With nothing to compare it with, a required `iss` (RFC 9207) would accept any issuer's.
            throw OAuth2Error(
                code: .invalidConfiguration, message: "requiring iss in redirects needs the issuer (the configuration's issuer)")
        }
        try issuerRule.validate(issuer: issuer)
        if let openID {
            guard issuer != nil else {
                throw OAuth2Error(code: .invalidConfiguration, message: "OpenID Connect needs the issuer (the configuration's issuer)")
            }
            try openID.validate()
        }
        if let algorithm = dpop?.algorithm, !DPoPKey.supportedAlgorithms.contains(algorithm) {
            throw OAuth2Error(
                code: .invalidConfiguration,
                message:
                    "a DPoP key cannot be made for \(OAuth2Error.sanitize(String(algorithm.rawValue.prefix(20)))); use ES256, EdDSA, PS256 or RS256"
            )
        }
        for resource in resources {
            guard let parts = URLParts(resource.absoluteString[...]), !parts.scheme.isEmpty, parts.fragment == nil else {
                throw OAuth2Error(
                    code: .invalidConfiguration, message: "a resource must be an absolute URI without a fragment (RFC 8707 §2)")
            }
        }
        for (name, _) in additionalTokenParameters where Self.reservedTokenParameters.contains(name) {
            throw OAuth2Error(
                code: .invalidConfiguration, message: "the additional token parameter \(name) would replace one the client sets")
        }
        if let assertionGrant, !assertionGrant.type.contains(":") {
            throw OAuth2Error(code: .invalidConfiguration, message: "an assertion grant's type must be an absolute URI")
        }
        try validateSecurityProfile()
        guard maxResponseSize > 0, expirySkew >= .zero, requestTimeout > .zero else {
            throw OAuth2Error(code: .invalidConfiguration, message: "limits must be positive")
        }
    }
}

extension OAuth2Configuration {
    /// The client secret to send at `now`: the ``signedClientSecret``'s
    /// (made or renewed as needed), else ``clientSecret``; `nil` when there is
    /// none or it is empty.
    ///
    /// - Throws: `invalid_configuration` when the signed secret cannot be signed.
    func currentClientSecret(at now: Date) throws(OAuth2Error) -> Secret? {
        if let signedClientSecret {
            return try signedClientSecret.secret(clientID: clientID, now: now)
        }
        return clientSecret.flatMap { $0.isEmpty ? nil : $0 }
    }

    /// RFC 8707 `resource` (once per resource) and `audience`, for the
    /// authorization request and every token and device authorization request.
    var targetParameters: [(String, String)] {
        resources.map { ("resource", $0.absoluteString) } + (audience.map { [("audience", $0)] } ?? [])
    }

    /// The token request parameters the client sets itself.
    static let reservedTokenParameters: Set<String> = [
        "grant_type", "code", "redirect_uri", "code_verifier", "refresh_token", "scope", "username", "password",
        "assertion", "device_code", "client_id", "client_secret", "client_assertion", "client_assertion_type",
        "resource", "audience",
    ]

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
