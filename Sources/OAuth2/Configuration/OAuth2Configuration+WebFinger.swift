#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension OAuth2Configuration {
    /// A configuration for the OpenID provider of a user identifier, in one
    /// call: the issuer by WebFinger (``OpenIDIssuer/webFinger(_:rules:transport:)``),
    /// then its OpenID Connect configuration (`<issuer>/.well-known/openid-configuration`,
    /// OpenID Connect Discovery 1.0 §4), which must name exactly that issuer.
    ///
    /// ```swift
    /// let configuration = try await OAuth2Configuration.discover(
    ///     webFinger: "joe@example.com", clientID: clientID, clientSecret: secret, transport: transport)
    /// ```
    ///
    /// Both requests are held to `rules`: no redirect, ``DiscoveryRules/maxDocumentSize``,
    /// ``DiscoveryRules/timeout``; and, unless ``DiscoveryRules/allowsPrivateAuthorizationServers``
    /// is set, an issuer on a public host may not name an endpoint the client
    /// sends requests to on an internal address (the SSRF rule of
    /// ``AuthorizationServerMetadata/discover(authorizationServer:rules:transport:)``).
    /// A provider found this way has OpenID Connect's document; RFC 8414's is
    /// not tried.
    ///
    /// - Parameters:
    ///   - identifier: what the user typed (`joe@example.com`, `acct:…`, a URL, a host).
    ///   - clientID: the client's id at the provider.
    ///   - clientSecret: the client's secret; `nil` for a public client.
    ///   - rules: the limits of both lookups.
    ///   - transport: what the documents are fetched with.
    /// - Throws: ``OAuth2Error``: the errors of ``OpenIDIssuer/webFinger(_:rules:transport:)``
    ///   (`invalid_identifier`, `webfinger_failed`, …); discovery's (`issuer_mismatch`,
    ///   `insecure_endpoint`, `http_error`, …); `invalid_configuration` when the
    ///   document names no token endpoint.
    public static func discover(
        webFinger identifier: String,
        clientID: String,
        clientSecret: Secret? = nil,
        rules: DiscoveryRules = DiscoveryRules(),
        transport: any HTTPTransport
    ) async throws(OAuth2Error) -> OAuth2Configuration {
        let transport = rules.guarding(transport)
        let issuer = try await OpenIDIssuer.webFinger(identifier, rules: rules, transport: transport)
        let metadata = try await AuthorizationServerMetadata.fetch(
            issuer: issuer, document: .openIDConfiguration, transport: transport,
            timeout: rules.timeout, maxResponseSize: rules.maxDocumentSize
        )
        try AuthorizationServerMetadata.requireNoInternalEndpoints(metadata, rules: rules)
        let configuration = try OAuth2Configuration(metadata: metadata, clientID: clientID, clientSecret: clientSecret)
        try configuration.validate()
        return configuration
    }
}
