import OAuth2

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// `oauth2 call URL` with nothing configured: the library's
/// ``ProtectedResourceClient`` does the MCP authorization spec's dance, and
/// the CLI saves what it learned as a provider.
extension CallCommand {
    /// Whether the call configures itself from the URL: no provider says where
    /// the authorization server is (no token endpoint, no issuer), or the
    /// provider is one such a call saved.
    func signsInByItself(_ settings: Settings) -> Bool {
        if let record = settings.provider?.record, DiscoveredProvider.isDiscovered(record) { return true }
        return settings.tokenURL == nil && settings.issuer == nil
    }

    /// `--client-metadata-url` (or `OAUTH2_CLIENT_METADATA_URL`): an https URL
    /// with a path, as the client ID metadata document draft requires of a
    /// `client_id`.
    func metadataDocumentURL() throws -> URL? {
        guard let text = clientMetadataURL ?? EnvironmentVariables.value("OAUTH2_CLIENT_METADATA_URL") else { return nil }
        guard let url = URL(string: text), url.scheme?.lowercased() == "https", url.host?.isEmpty == false, url.path.count > 1,
            url.fragment == nil, url.user == nil
        else {
            throw UsageError(
                "--client-metadata-url (or OAUTH2_CLIENT_METADATA_URL) must be an https URL with a path, such as https://app.example/oauth-client.json"
            )
        }
        return url
    }

    /// Sends `request` through a ``ProtectedResourceClient`` that discovers,
    /// identifies itself, signs in and steps up as needed, then saves the
    /// provider it used.
    func sendDiscovering(_ request: HTTPTransportRequest, session: Session) async throws -> HTTPTransportResponse {
        let settings = session.settings
        let store = try session.resourceStore()
        let identity = session.resourceIdentity(saved: session.discoveredProvider, metadataDocumentURL: try metadataDocumentURL())
        let handler: any AuthorizationRedirectHandler =
            listen
            ? try ListenerRedirectHandler(redirectURI: settings.redirectURI, timeout: .seconds(listenTimeout))
            : PastedRedirectHandler(redirectURI: settings.redirectURI)
        let client = session.resourceClient(
            identity: identity, store: store, redirectHandler: handler, stepUp: refusesStepUp ? .report : .automatic)
        let response = try await client.send(request)
        await remember(request.url, identity: identity, store: store, settings: settings, logger: session)
        return response
    }

    /// Saves the provider the call used, from what the library kept in the
    /// store; a call that learned nothing (a resource that wanted no token)
    /// saves nothing. A failure here costs the provider list an entry, not
    /// the call its answer.
    private func remember(_ url: URL, identity: ClientIdentity, store: any ClientRecordStore, settings: Settings, logger session: Session)
        async
    {
        do {
            var found: DiscoveredResource?
            for key in ProtectedResourceClient.recordKeys(for: url) where found == nil {
                if let record = try await store.loadDiscoveredResource(key),
                    ProtectedResourceMetadata.matches(resource: record.metadata.resource, requestedURL: url)
                {
                    found = record
                }
            }
            guard let discovered = found else { return }
            let server = discovered.authorizationServer
            let registration = try await store.loadRegistration(issuer: server.issuer)
            let clientID: String?
            if let document = identity.metadataDocumentURL, server.clientIDMetadataDocumentSupported {
                clientID = document.absoluteString
            } else if let registration {
                clientID = registration.clientID
            } else {
                clientID = identity.clientID
            }
            let name = try DiscoveredProvider.remember(
                server: server, resource: discovered.metadata.resource, clientID: clientID,
                clientMetadataURL: identity.metadataDocumentURL, registration: registration,
                redirectURI: settings.redirectURI, scopes: settings.scopes)
            session.logger.debug("saved the provider", metadata: ["oauth2.provider": "\(name)"])
        } catch {
            StandardError.line("note: the provider could not be saved in providers.json: \(error)")
        }
    }
}
