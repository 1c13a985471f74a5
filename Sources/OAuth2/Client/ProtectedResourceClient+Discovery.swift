import Logging
#if canImport(FoundationEssentials)
package import FoundationEssentials
#else
package import Foundation
#endif

/// Finding what the client knows about a URL, and learning it when it knows nothing.
extension ProtectedResourceClient {
    /// The session of the resource `url` belongs to: one made in this process,
    /// else one made from a fresh ``DiscoveredResource`` in the store (no
    /// round trip, unless the client must register); `nil` when neither is known.
    func knownSession(for url: URL) async throws(OAuth2Error) -> ResourceSession? {
        if let inMemory = rememberedSession(for: url) { return inMemory }
        let now = clock.now()
        let lifetime = options.rules.cacheLifetime
        for key in Self.recordKeys(for: url) {
            let record: DiscoveredResource?
            do {
                record = try await store.loadDiscoveredResource(key)
            } catch {
                logger.debug("a stored resource record cannot be read; discovering again", metadata: ["oauth2.error": "\(error.code)"])
                continue
            }
            guard let record, ResourceSession.isFresh(record, at: now, lifetime: lifetime),
                ProtectedResourceMetadata.matches(resource: record.metadata.resource, requestedURL: url)
            else { continue }
            return remember(try await makeSession(record, initialScopes: nil))
        }
        return nil
    }

    /// Where records for `url` may be kept: the URL without query and
    /// fragment, then each parent path down to the origin (a resource's
    /// identifier is its origin or a path prefix, and records are kept under it too).
    package static func recordKeys(for url: URL) -> [URL] {
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: false) else { return [url] }
        components.query = nil
        components.fragment = nil
        var keys: [URL] = []
        var path = components.path
        while true {
            components.path = path
            if let key = components.url, !keys.contains(key) { keys.append(key) }
            guard !path.isEmpty else { break }
            if path.hasSuffix("/") {
                path.removeLast()
            } else if let slash = path.lastIndex(of: "/") {
                path = String(path[...slash])
            } else {
                path = ""
            }
        }
        return keys
    }

    /// The fresh session made in this process for the resource `url` belongs to (the most specific).
    func rememberedSession(for url: URL) -> ResourceSession? {
        let now = clock.now()
        let lifetime = options.rules.cacheLifetime
        return sessions.withLock { sessions -> ResourceSession? in
            sessions = sessions.filter { $0.value.isFresh(at: now, lifetime: lifetime) }
            return
                sessions.values
                .filter { ProtectedResourceMetadata.matches(resource: $0.record.metadata.resource, requestedURL: url) }
                .max { $0.record.metadata.resource.utf8.count < $1.record.metadata.resource.utf8.count }
        }
    }

    /// Keeps `session` for its resource, or returns the one another task kept first.
    func remember(_ session: ResourceSession) -> ResourceSession {
        sessions.withLock { sessions in
            if let existing = sessions[session.record.metadata.resource], existing.record == session.record { return existing }
            sessions[session.record.metadata.resource] = session
            return session
        }
    }

    /// Discovers the resource at `url` (RFC 9728, then RFC 8414 for its
    /// first allowed authorization server), keeps what was learned in the
    /// store, and makes its session.
    ///
    /// Single-flight per starting document in this client: callers that ask
    /// while a discovery of the same document runs share its session or its
    /// error, so concurrent first calls fetch each document once and register once.
    ///
    /// - Parameter challenge: the resource's `Bearer` challenge: its
    ///   `resource_metadata` says where the metadata is, and its `scope` what
    ///   the first sign-in asks for (the MCP spec's order: the challenge's, then `scopes_supported`).
    func discover(for url: URL, challenge: BearerChallenge?) async throws(OAuth2Error) -> ResourceSession {
        var metadataURL: URL?
        if let named = challenge?.resourceMetadata {
            guard let parsed = URL(string: named), parsed.scheme != nil else {
                throw OAuth2Error(code: .invalidResourceMetadata, message: "the resource's resource_metadata is not an absolute URL")
            }
            metadataURL = parsed
        }
        let key = metadataURL.map { "metadata \($0.absoluteString)" } ?? "url \(Self.recordKeys(for: url)[0].absoluteString)"
        let (result, _) = await discoveries.run(key) { [metadataURL] in
            try await self.learn(url, metadataURL: metadataURL, challenge: challenge)
        }
        return try Self.shared(result)
    }

    /// A shared run's result, its error as the run threw it.
    static func shared<Value>(_ result: Result<Value, any Error>) throws(OAuth2Error) -> Value {
        switch result {
        case .success(let value):
            return value
        case .failure(let error as OAuth2Error):
            throw error
        case .failure(let error):
            throw OAuth2Error(
                code: error is CancellationError ? .cancelled : .transportError, message: "the shared run failed: \(type(of: error))")
        }
    }

    /// The discovery itself, run once however many callers wait for it; a
    /// caller that comes just after a discovery of its resource ended uses its session.
    private func learn(_ url: URL, metadataURL: URL?, challenge: BearerChallenge?) async throws(OAuth2Error) -> ResourceSession {
        if let known = rememberedSession(for: url) { return known }
        let metadata = try await ProtectedResourceMetadata.fetch(
            for: url, metadataURL: metadataURL, rules: options.rules, transport: transport)
        let allowed = metadata.authorizationServers.filter { options.rules.allowedAuthorizationServers?.contains($0) ?? true }
        guard let issuer = allowed.first else {
            throw OAuth2Error(
                code: .invalidResourceMetadata, message: "the resource names no authorization server the discovery rules allow")
        }
        let server = try await AuthorizationServerMetadata.discover(authorizationServer: issuer, rules: options.rules, transport: transport)
        let record = DiscoveredResource(requestedURL: url, metadata: metadata, authorizationServer: server, fetchedAt: clock.now())
        let askedScopes = challenge?.scope.map(ProviderText.scopeTokens).flatMap { $0.isEmpty ? nil : $0 }
        let session = try await makeSession(record, initialScopes: askedScopes)
        await keep(record, resource: session.resource)
        return remember(session)
    }

    /// Saves `record` under the URL asked for and under its resource, so
    /// that the next call to any URL of the resource needs no discovery.
    /// Best effort: a record the store refuses costs a discovery next time, nothing more.
    private func keep(_ record: DiscoveredResource, resource: URL) async {
        do {
            try await store.saveDiscoveredResource(record)
            if resource != record.requestedURL {
                var underResource = record
                underResource.requestedURL = resource
                try await store.saveDiscoveredResource(underResource)
            }
        } catch {
            logger.debug("the store could not keep what discovery learned", metadata: ["oauth2.error": "\(error.code)"])
        }
    }

    /// The session for `record`: the server must advertise PKCE S256 (the MCP
    /// spec: a client refuses to go on otherwise), the client identifies
    /// itself, and the provider's configuration asks for the resource on
    /// every request (RFC 8707) and binds the tokens to it.
    func makeSession(_ record: DiscoveredResource, initialScopes: [String]?) async throws(OAuth2Error) -> ResourceSession {
        let server = record.authorizationServer
        guard server.codeChallengeMethodsSupported.contains(PKCE.method) else {
            throw OAuth2Error(
                code: .invalidConfiguration,
                message:
                    "the authorization server \(server.issuer) does not advertise PKCE S256 (code_challenge_methods_supported); the client does not sign in without it"
            )
        }
        guard let resource = URL(string: record.metadata.resource) else {
            throw OAuth2Error(code: .invalidResourceMetadata, message: "the resource identifier is not a URL")
        }
        let identified = try await identify(at: server)
        var configuration = try OAuth2Configuration(metadata: server, clientID: identified.clientID, clientSecret: identified.clientSecret)
        if let method = identified.registration?.metadata.tokenEndpointAuthMethod, identified.clientSecret != nil {
            if method == "client_secret_post" { configuration.clientAuthentication = .clientSecretPost }
            if method == "client_secret_basic" { configuration.clientAuthentication = .clientSecretBasic }
        }
        configuration.resources = [resource]
        configuration.boundResource = resource
        configuration.dpop = options.dpop
        configuration.connectsOnlyToPublicAddresses = options.rules.connectsOnlyToPublicAddresses
        let scopes = options.scopes ?? initialScopes ?? record.metadata.scopesSupported
        configuration.defaultScopes = scopes
        let provider = try OAuth2Provider(configuration: configuration, store: store, transport: transport, clock: clock, logger: logger)
        let tokenAccount = Self.tokenAccount(authorizationServer: server.issuer, resource: record.metadata.resource, account: account)
        return ResourceSession(
            record: record, resource: resource, registration: identified.registration, provider: provider, tokenAccount: tokenAccount,
            initialScopes: scopes)
    }

    /// How the client identifies itself at `server`.
    struct Identified: Sendable {
        var clientID: String
        var clientSecret: Secret?
        var registration: ClientRegistration?
    }

    /// The identity in ``ClientIdentity``'s order: the metadata document when
    /// the server supports them, a registration (the stored one, or a new one)
    /// when it has a registration endpoint, the pre-registered client id.
    ///
    /// Single-flight per issuer in this client, and a registration is made
    /// holding the store's lock for it (``registrationLock(issuer:)``), after
    /// reading the store again: a client or process that registered while
    /// this one waited is not registered a second time.
    ///
    /// - Throws: `no_client_identity` when none fits; the registration's
    ///   errors; the store lock's (`lock_timeout`).
    func identify(at server: AuthorizationServerMetadata) async throws(OAuth2Error) -> Identified {
        let (result, _) = await identifications.run(server.issuer) { try await self.identifyOnce(at: server) }
        return try Self.shared(result)
    }

    /// The account name of the store lock held while registering at
    /// `issuer`; no token is stored under it.
    static func registrationLock(issuer: String) -> String {
        "registration \(issuer)"
    }

    private func identifyOnce(at server: AuthorizationServerMetadata) async throws(OAuth2Error) -> Identified {
        if let document = identity.metadataDocumentURL, server.clientIDMetadataDocumentSupported {
            return Identified(clientID: document.absoluteString)
        }
        if identity.registrationMetadata != nil, server.registrationEndpoint != nil {
            if let kept = try await usableRegistration(at: server) {
                return Identified(clientID: kept.clientID, clientSecret: kept.clientSecret, registration: kept)
            }
            let registration = try await store.withLock(
                account: Self.registrationLock(issuer: server.issuer), timeout: registrationLockWait
            ) {
                () async throws(OAuth2Error) -> ClientRegistration in
                if let kept = try await self.usableRegistration(at: server) { return kept }
                return try await self.register(at: server)
            }
            return Identified(clientID: registration.clientID, clientSecret: registration.clientSecret, registration: registration)
        }
        if let clientID = identity.clientID {
            return Identified(clientID: clientID, clientSecret: identity.clientSecret)
        }
        throw OAuth2Error(
            code: .noClientIdentity,
            message:
                "the authorization server \(server.issuer) supports none of the client's identities (client ID metadata document: \(server.clientIDMetadataDocumentSupported ? "yes" : "no"), registration endpoint: \(server.registrationEndpoint == nil ? "no" : "yes"), and no pre-registered client id)"
        )
    }

    /// How long to wait for the store's registration lock: bounded by the
    /// registration request's own timeout, as the account lock is by the token requests'.
    var registrationLockWait: Duration { (options.rules.timeout ?? .seconds(30)) * 2 + .seconds(5) }

    /// The registration kept for `server` whose secret has not expired.
    private func usableRegistration(at server: AuthorizationServerMetadata) async throws(OAuth2Error) -> ClientRegistration? {
        guard let kept = try await store.loadRegistration(issuer: server.issuer), !Self.hasExpiredSecret(kept, at: clock.now()) else {
            return nil
        }
        return kept
    }

    private static func hasExpiredSecret(_ registration: ClientRegistration, at now: Date) -> Bool {
        guard let expiry = registration.clientSecretExpiresAt else { return false }
        return expiry <= now
    }

    /// Registers the client (RFC 7591) and keeps the registration in the
    /// store; its redirect URIs are the handler's when the app named none.
    private func register(at server: AuthorizationServerMetadata) async throws(OAuth2Error) -> ClientRegistration {
        guard var metadata = identity.registrationMetadata else {
            throw OAuth2Error(code: .noClientIdentity, message: "the client has no registration metadata")
        }
        if metadata.redirectURIs.isEmpty, let redirectURI = redirectHandler?.redirectURI {
            metadata.redirectURIs = [redirectURI]
        }
        logger.debug("registering the client", metadata: ["oauth2.issuer": "\(server.issuer)"])
        let registration = try await ClientRegistrar(metadata: server, transport: transport, rules: options.rules)
            .register(metadata, initialAccessToken: identity.initialAccessToken)
        do {
            try await store.saveRegistration(registration)
        } catch {
            // Not fatal: the registration serves this process, and the next one registers again.
            logger.warning("the store could not keep the client's registration", metadata: ["oauth2.error": "\(error.code)"])
        }
        return registration
    }

    /// The server forgot `session`'s registration (`invalid_client`): it is
    /// deleted with the resource's token (issued to the forgotten client), and
    /// the client registers again.
    ///
    /// Only what belongs to the forgotten client is deleted, under the store's
    /// registration lock: concurrent calls that all heard `invalid_client`
    /// register again once, and none deletes the new registration or a token
    /// another call already got with it.
    func registerAgain(_ session: ResourceSession) async throws(OAuth2Error) -> ResourceSession {
        let issuer = session.record.authorizationServer.issuer
        let forgotten = session.provider.configuration.clientID
        logger.debug(
            "the authorization server forgot the client's registration; registering again", metadata: ["oauth2.issuer": "\(issuer)"])
        try await store.withLock(account: Self.registrationLock(issuer: issuer), timeout: registrationLockWait) {
            () async throws(OAuth2Error) -> Void in
            if try await self.store.loadRegistration(issuer: issuer)?.clientID == forgotten {
                try await self.store.deleteRegistration(issuer: issuer)
            }
        }
        if let held = try? await store.load(account: session.client.account), held.binding?.clientID ?? forgotten == forgotten {
            try? await store.delete(account: session.client.account)
        }
        sessions.withLock { sessions in
            sessions = sessions.filter { $0.value.provider.configuration.clientID != forgotten }
        }
        let fresh = try await makeSession(session.record, initialScopes: session.initialRequest.scopes)
        return remember(fresh)
    }
}
