import OAuth2

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// `oauth2 token` for the tokens `oauth2 call` keeps: one per resource, under
/// ``ProtectedResourceClient``'s account key (authorization server, resource,
/// account), not under the plain account a provider given by hand uses.
extension TokenCommand {
    /// A resource whose token `oauth2 call` keeps, and the provider it saved for its server.
    struct ResourceTarget {
        /// The saved provider's name.
        var providerName: String
        /// The saved provider: how the call identified itself there.
        var record: ProviderRecord
        /// The authorization server's issuer.
        var issuer: String
        /// The resource identifier (RFC 9728 `resource`) the token is for.
        var resource: String
        /// The URL asked for: the resource, or a URL under it.
        var url: URL
    }

    /// The resource `oauth2 token` is about, or `nil` when it is about the
    /// plain account as before: `--resource URL` (the resource or a URL under
    /// it, as `oauth2 call` takes it) with a provider `oauth2 call` saved, or
    /// with no provider at all (then the saved provider whose resources hold
    /// the URL); or `--provider NAME` alone when that provider has exactly one resource.
    ///
    /// - Throws: ``UsageError`` when it is ambiguous (several `--resource`s,
    ///   several resources of the provider, several providers for the URL) or
    ///   the provider has no such resource; `not_authenticated` when no saved
    ///   provider has a resource for the URL.
    static func resourceTarget(_ settings: Settings) throws -> ResourceTarget? {
        let given = settings.resources
        if let provider = settings.provider {
            guard DiscoveredProvider.isDiscovered(provider.record), let issuer = provider.record.issuer,
                let resources = provider.record.resources, !resources.isEmpty
            else { return nil }
            let name = provider.name
            guard let url = try single(given) else {
                guard resources.count == 1, let url = URL(string: resources[0]) else {
                    throw UsageError(
                        "the provider \(name) keeps tokens for several resources (\(resources.joined(separator: ", "))): say which with --resource URL"
                    )
                }
                return ResourceTarget(providerName: name, record: provider.record, issuer: issuer, resource: resources[0], url: url)
            }
            guard let resource = longestMatch(resources, for: url) else {
                throw UsageError(
                    "the provider \(name) keeps no token for \(url.redactedForMessages(marksQuery: false)): its resources are \(resources.joined(separator: ", "))"
                )
            }
            return ResourceTarget(providerName: name, record: provider.record, issuer: issuer, resource: resource, url: url)
        }
        // A provider configured by flags or variables: --resource is the RFC 8707 parameter, as for every grant.
        guard settings.tokenURL == nil, settings.issuer == nil, let url = try single(given) else { return nil }
        let file = try ProviderFile.load()
        var found: [ResourceTarget] = []
        for (name, record) in file.providers.sorted(by: { $0.key < $1.key }) where DiscoveredProvider.isDiscovered(record) {
            guard let issuer = record.issuer, let resource = longestMatch(record.resources ?? [], for: url) else { continue }
            found.append(ResourceTarget(providerName: name, record: record, issuer: issuer, resource: resource, url: url))
        }
        let longest = found.map(\.resource.utf8.count).max()
        found = found.filter { $0.resource.utf8.count == longest }
        guard found.count <= 1 else {
            throw UsageError(
                "several saved providers have a resource for \(url.redactedForMessages(marksQuery: false)) (\(found.map(\.providerName).joined(separator: ", "))): say which with --provider NAME"
            )
        }
        guard let target = found.first else {
            throw OAuth2Error(
                code: .notAuthenticated,
                message:
                    "no saved provider has a resource for \(url.redactedForMessages(marksQuery: false)); oauth2 call with that URL signs in"
            )
        }
        return target
    }

    /// The one `--resource` given, if any.
    private static func single(_ resources: [URL]) throws -> URL? {
        guard resources.count <= 1 else {
            throw UsageError("oauth2 token prints one resource's token: give one --resource")
        }
        return resources.first
    }

    /// The longest of `resources` that `url` is, or is under.
    private static func longestMatch(_ resources: [String], for url: URL) -> String? {
        resources.filter { ProtectedResourceMetadata.matches(resource: $0, requestedURL: url) }.max { $0.utf8.count < $1.utf8.count }
    }

    /// The account key the token of `target` is stored under.
    static func storedAccount(_ target: ResourceTarget, settings: Settings) -> String {
        ProtectedResourceClient.tokenAccount(authorizationServer: target.issuer, resource: target.resource, account: settings.account)
    }

    /// The token of `target`, refreshed first when it is about to expire,
    /// through the client `oauth2 call` uses (the same lock, the same
    /// rotation rules); never a sign-in.
    ///
    /// - Throws: `not_authenticated` when none is kept (or its grant is gone).
    static func resourceToken(_ target: ResourceTarget, session: Session) async throws -> AccessToken {
        let store = try session.resourceStore()
        // The provider found for the URL, not only one --provider named: a
        // call that identified with a metadata document must be known by it
        // here too, or the library would register a client instead.
        // `oauth2 token` discovers nothing: it refreshes at the token endpoint
        // the stored record names, where the token came from, however old the
        // record is (`oauth2 call` brings it up to date).
        let client = session.resourceClient(
            identity: session.resourceIdentity(saved: target.record, metadataDocumentURL: nil), store: store,
            redirectHandler: nil, stepUp: .report, cacheLifetime: .seconds(100 * 365 * 86_400), authorizationServer: target.issuer)
        guard let token = try await client.token(for: target.url) else {
            throw OAuth2Error(
                code: .notAuthenticated,
                message:
                    "no token is kept for the resource \(target.resource) (provider \(target.providerName), account \(session.settings.account)); oauth2 call with a URL of it signs in"
            )
        }
        return token
    }
}
