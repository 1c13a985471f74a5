#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension OAuth2Configuration {
    /// A configuration from an issuer's discovered metadata, in one call:
    /// OpenID Connect Discovery, or RFC 8414 metadata when the issuer has no
    /// OpenID configuration, held to the rules of ``MetadataCache/metadata(issuer:issuerRule:timeout:)``.
    ///
    /// ```swift
    /// let configuration = try await OAuth2Configuration.discover(
    ///     issuer: "https://accounts.google.com", clientID: clientID, clientSecret: secret, transport: transport)
    /// ```
    ///
    /// - Parameters:
    ///   - issuer: the issuer identifier, exactly as the provider states it (`https`).
    ///   - clientID: the client's id at the provider.
    ///   - clientSecret: the client's secret; `nil` for a public client.
    ///   - transport: what the metadata is fetched with.
    ///   - cache: where discovered metadata is kept between calls; without one, every call asks the provider.
    ///   - clientCertificate: the client certificate for mutual TLS (RFC 8705), or `nil`; see ``init(metadata:clientID:clientSecret:clientCertificate:)``.
    ///   - issuerRule: which `iss` values name the issuer (``issuerRule``):
    ///     ``IssuerRule/exact`` by default; a template rule also accepts a
    ///     metadata document naming a template of `issuer`, which becomes the
    ///     configuration's issuer (Microsoft Entra ID's `common`).
    /// - Throws: ``OAuth2Error``: discovery's errors (`issuer_mismatch`,
    ///   `insecure_endpoint`, `http_error`, …); `invalid_configuration` when
    ///   the metadata names no token endpoint.
    public static func discover(
        issuer: String,
        clientID: String,
        clientSecret: Secret? = nil,
        transport: any HTTPTransport,
        cache: MetadataCache? = nil,
        clientCertificate: ClientCertificate? = nil,
        issuerRule: IssuerRule = .exact
    ) async throws(OAuth2Error) -> OAuth2Configuration {
        let metadata: AuthorizationServerMetadata
        if let cache {
            metadata = try await cache.metadata(issuer: issuer, issuerRule: issuerRule)
        } else {
            metadata = try await AuthorizationServerMetadata.discover(issuer: issuer, issuerRule: issuerRule, transport: transport)
        }
        var configuration = try OAuth2Configuration(
            metadata: metadata, clientID: clientID, clientSecret: clientSecret, clientCertificate: clientCertificate)
        configuration.issuerRule = issuerRule
        try configuration.validate()
        return configuration
    }

    /// A configuration from an issuer's metadata: its endpoints, its issuer
    /// (a redirect's `iss` is checked, and required when the metadata says
    /// so), OpenID Connect when it names a `jwks_uri`, and a client
    /// authentication it supports (`client_secret_basic` unless it lists only
    /// `client_secret_post`), the PKCE methods it lists (when they do not
    /// include `S256`, an authorization request is refused rather than made
    /// with `plain`), and the DPoP algorithms it lists: with ``dpop`` set, a
    /// new grant's key is made for one of them.
    /// Its pushed authorization request endpoint and whether it requires
    /// pushed requests (RFC 9126 §5) or signed request objects (RFC 9101), and
    /// the request object algorithms it accepts, are kept too.
    ///
    /// With a `clientCertificate` (mutual TLS, RFC 8705), the token,
    /// revocation, device authorization and userinfo endpoints are the
    /// metadata's `mtls_endpoint_aliases` where it names one, and a client
    /// without a secret authenticates with `tls_client_auth` (or
    /// `self_signed_tls_client_auth`, when the metadata lists only that).
    ///
    /// - Throws: ``OAuth2Error`` `invalid_configuration` when the metadata
    ///   names no token endpoint; the errors of ``init(clientID:clientSecret:authorizationEndpoint:tokenEndpoint:revocationEndpoint:deviceAuthorizationEndpoint:defaultScopes:clientAuthentication:expirySkew:allowsPasswordGrant:issuer:requiresIssuerInRedirect:maxResponseSize:requestTimeout:assertionGrant:openID:resources:audience:additionalTokenParameters:clientAssertionKey:clientAssertionAudience:clientCertificate:signedClientSecret:)``.
    public init(
        metadata: AuthorizationServerMetadata, clientID: String, clientSecret: Secret? = nil, clientCertificate: ClientCertificate? = nil
    ) throws(OAuth2Error) {
        let mutualTLS = clientCertificate != nil
        guard let tokenEndpoint = metadata.endpoint(metadata.tokenEndpoint, named: "token_endpoint", mutualTLS: mutualTLS) else {
            throw OAuth2Error(code: .invalidConfiguration, message: "the issuer's metadata names no token endpoint")
        }
        var authentication: ClientAuthentication? = nil
        let methods = metadata.tokenEndpointAuthMethodsSupported
        if clientSecret != nil, !methods.isEmpty, !methods.contains("client_secret_basic"), methods.contains("client_secret_post") {
            authentication = .clientSecretPost
        }
        if clientSecret == nil, mutualTLS {
            if methods.contains("tls_client_auth") {
                authentication = .tlsClientAuth
            } else if methods.contains("self_signed_tls_client_auth") {
                authentication = .selfSignedTLSClientAuth
            }
        }
        var openID = OpenIDSettings(metadata: metadata)
        openID?.userinfoEndpoint = metadata.endpoint(metadata.userinfoEndpoint, named: "userinfo_endpoint", mutualTLS: mutualTLS)
        try self.init(
            clientID: clientID,
            clientSecret: clientSecret,
            authorizationEndpoint: metadata.authorizationEndpoint,
            tokenEndpoint: tokenEndpoint,
            revocationEndpoint: metadata.endpoint(metadata.revocationEndpoint, named: "revocation_endpoint", mutualTLS: mutualTLS),
            deviceAuthorizationEndpoint: metadata.endpoint(
                metadata.deviceAuthorizationEndpoint, named: "device_authorization_endpoint", mutualTLS: mutualTLS),
            clientAuthentication: authentication,
            issuer: metadata.issuer,
            requiresIssuerInRedirect: metadata.authorizationResponseIssParameterSupported,
            openID: openID,
            clientCertificate: clientCertificate
        )
        codeChallengeMethodsSupported = metadata.codeChallengeMethodsSupported
        pushedAuthorizationRequestEndpoint = metadata.endpoint(
            metadata.pushedAuthorizationRequestEndpoint, named: "pushed_authorization_request_endpoint", mutualTLS: mutualTLS)
        requiresPushedAuthorizationRequests = metadata.requirePushedAuthorizationRequests
        requiresSignedRequestObject = metadata.requireSignedRequestObject
        requestURIParameterSupported = metadata.requestURIParameterSupported
        requestObjectSigningAlgValuesSupported = metadata.requestObjectSigningAlgValuesSupported
        dpopSigningAlgValuesSupported = metadata.dpopSigningAlgValuesSupported.map(JWSAlgorithm.init(rawValue:))
    }
}
