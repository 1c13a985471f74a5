import OAuth2

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The ``ProtectedResourceClient`` that `oauth2 call` signs in with and
/// `oauth2 token` reads back through: made in one place, so that both
/// identify the CLI the same way and so find the same registration and the
/// same tokens (kept per authorization server, resource and account).
extension Session {
    /// The saved provider, when `oauth2 call` or `oauth2 register` saved it.
    var discoveredProvider: ProviderRecord? {
        settings.provider.map(\.record).flatMap { DiscoveredProvider.isDiscovered($0) ? $0 : nil }
    }

    /// The store of a client that configures itself: a directory store, which
    /// keeps registrations and discovered resources beside the tokens.
    func resourceStore() throws -> any TokenStore & ClientRecordStore {
        guard case .directory = settings.store else {
            throw UsageError(
                "a call that configures itself keeps what it learns in a store directory; a PostgreSQL store holds one provider's tokens: save the provider first (oauth2 provider add)"
            )
        }
        guard let store = try store(for: nil) as? any TokenStore & ClientRecordStore else {
            throw UsageError("this token store cannot keep registrations and discovered resources")
        }
        return store
    }

    /// How the CLI identifies itself at a discovered server: the client ID
    /// metadata document (`metadataDocumentURL`, else the saved provider's),
    /// a registration (the kept one, or a new one), or a client id given by hand.
    func resourceIdentity(saved: ProviderRecord?, metadataDocumentURL: URL?) -> ClientIdentity {
        let documentURL = metadataDocumentURL ?? saved?.clientMetadataURL.flatMap { URL(string: $0) }
        // The registered redirect URI is the configured one: a loopback
        // provider matches it on any port (RFC 8252 §7.3), so one registration
        // serves pasted and --listen runs alike.
        let registration = ClientMetadata(
            redirectURIs: [settings.redirectURI],
            clientName: "oauth2 (swift-oauth2)",
            scope: settings.scopes.isEmpty ? nil : settings.scopes.joined(separator: " "),
            softwareID: "swift-oauth2-cli",
            softwareVersion: OAuth2Command.version
        )
        // A saved provider's client id came from registration or a metadata
        // document: the library finds those itself. A client id given by hand is pre-registered.
        let preregistered = saved == nil || saved?.registration == nil && saved?.clientMetadataURL == nil
        return ClientIdentity(
            metadataDocumentURL: documentURL,
            registrationMetadata: registration,
            clientID: preregistered ? settings.clientID : nil,
            clientSecret: preregistered ? settings.clientSecret : nil
        )
    }

    /// The client of the settings' account, restricted to one authorization
    /// server: `authorizationServer`, else the saved provider's, if any.
    ///
    /// - Parameters:
    ///   - redirectHandler: where a sign-in goes; `nil` for a client that never signs in.
    ///   - cacheLifetime: how long a discovered resource is used before it is discovered again.
    func resourceClient(
        identity: ClientIdentity,
        store: any TokenStore & ClientRecordStore,
        redirectHandler: (any AuthorizationRedirectHandler)?,
        stepUp: ProtectedResourceClient.StepUp = .automatic,
        cacheLifetime: Duration? = nil,
        authorizationServer: String? = nil
    ) -> ProtectedResourceClient {
        var rules = DiscoveryRules(timeout: settings.timeout)
        if let cacheLifetime { rules.cacheLifetime = cacheLifetime }
        // A provider saved for one authorization server sends no token to another.
        if let issuer = authorizationServer ?? discoveredProvider?.issuer { rules.allowedAuthorizationServers = [issuer] }
        return ProtectedResourceClient(
            identity: identity,
            redirectHandler: redirectHandler,
            store: store,
            account: settings.account,
            options: ProtectedResourceClient.Options(
                stepUp: stepUp,
                scopes: settings.scopes.isEmpty ? nil : settings.scopes,
                rules: rules
            ),
            transport: transport,
            logger: logger
        )
    }
}
