import Logging
import OAuth2

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What one run of a command works with: the settings, the process's one
/// transport (started by its first request), the logger, and from them the
/// store and the client.
struct Session: Sendable {
    let settings: Settings
    let transport: LazyTransport
    let logger: Logger
    /// The database of a PostgreSQL store, running while the command runs.
    let database: (any TokenDatabase)?
    /// The clients this run made, so that a token the store refused is saved
    /// (or reported) before the process exits with it.
    private let clients = LockedValue<[OAuth2Client]>([])
    /// The DPoP nonces kept between runs, and what this run started with.
    private let nonceFile: DPoPNonceFile?
    private let loadedNonces: [(origin: String, nonce: String)]

    /// Resolves the options, creates the transport, runs `body` and shuts the
    /// transport down before returning or throwing.
    static func run<Result>(_ options: CommonOptions, _ body: (Session) async throws -> Result) async throws -> Result {
        let settings = try Settings(options)
        var logger = Logger(label: "oauth2") { label in
            settings.verbose ? StreamLogHandler.standardError(label: label) as any LogHandler : SwiftLogNoOpLogHandler()
        }
        logger.logLevel = settings.verbose ? Logger.Level.debug : Logger.Level.critical
        let database = try Self.database(settings.store, logger: logger)
        let transport = LazyTransport(
            configuration: CurlTransport.Configuration(timeout: settings.timeout, caFile: settings.caFile), logger: logger)
        let nonceFile = try? DPoPNonceFile(store: settings.store)
        let session = Session(
            settings: settings, transport: transport, logger: logger, database: database, nonceFile: nonceFile,
            loadedNonces: nonceFile?.load() ?? [])
        do {
            let result = try await session.runningTheDatabase {
                let result = try await body(session)
                try await session.saveWhatTheStoreRefused()
                return result
            }
            session.saveNonces()
            await transport.shutdown()
            return result
        } catch {
            session.saveNonces()
            await transport.shutdown()
            throw error
        }
    }

    /// Keeps the DPoP nonces this run's providers hold for the next run (a
    /// failed run's too: the nonce a refusal carried is the one to use).
    /// A file that cannot be written costs the next run a round trip, not
    /// this command its success.
    private func saveNonces() {
        let clients = clients.withLock { $0 }
        guard let nonceFile, let capacity = clients.first?.provider.dpopNonces.capacity else { return }
        var merged = loadedNonces
        for client in clients {
            for entry in client.provider.dpopNonces.entries {
                merged.removeAll { $0.origin == entry.origin }
                merged.append(entry)
            }
        }
        do {
            try nonceFile.save(Array(merged.suffix(capacity)), loaded: loadedNonces)
        } catch {
            logger.debug("the DPoP nonces could not be kept for the next run", metadata: ["oauth2.error": "\(error)"])
        }
    }

    /// Runs `body` with the database running (a PostgreSQL client's pool
    /// works only while `run()` does), and stops it afterwards.
    private func runningTheDatabase<Result>(_ body: () async throws -> Result) async throws -> Result {
        guard let database else { return try await body() }
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await database.run() }
            defer { group.cancelAll() }
            return try await body()
        }
    }

    /// The database of a PostgreSQL store, its password from `PGPASSWORD` or
    /// the file `OAUTH2_STORE_PASSWORD_FILE` names (never from a flag or the URL).
    ///
    /// This executable may have no database driver (`oauth2`): then the
    /// command goes on in `oauth2-postgres` beside it, which has (the process
    /// image is replaced; this does not return), or fails when there is none.
    private static func database(_ store: StoreLocation, logger: Logger) throws -> (any TokenDatabase)? {
        guard case .postgres(let url, _) = store else { return nil }
        guard let databases = TokenDatabases.installed else {
            try TokenDatabases.continueInDatabaseExecutable()
        }
        var password = EnvironmentVariables.value("PGPASSWORD")
        if let file = EnvironmentVariables.value("OAUTH2_STORE_PASSWORD_FILE") {
            password = try SecretFile.load(file, what: "the PostgreSQL password file (OAUTH2_STORE_PASSWORD_FILE)").value
        }
        return try databases.open(url, password, logger)
    }

    /// The token store: the settings' directory or PostgreSQL table, encrypted
    /// when `OAUTH2_STORE_KEY` holds a key. A PostgreSQL store holds one
    /// provider's tokens, `binding`'s, and requires a key unless
    /// `OAUTH2_STORE_PLAINTEXT=1` says to keep its rows readable.
    func store(for binding: TokenBinding?) throws -> any TokenStore {
        let key =
            EnvironmentVariables.value("OAUTH2_STORE_KEY") != nil
            ? try FileTokenStore.EncryptionKey.fromEnvironment("OAUTH2_STORE_KEY") : nil
        switch settings.store {
        case .directory(let directory):
            return try FileTokenStore(directory: directory, encryption: key.map { .aesGCM($0) } ?? .plaintext)
        case .postgres(_, let table):
            guard let database, let binding else {
                throw UsageError("a PostgreSQL store holds one provider's tokens: give --client-id and --token-url (or --issuer)")
            }
            guard key != nil || EnvironmentVariables.isTrue("OAUTH2_STORE_PLAINTEXT") else {
                throw UsageError(
                    "a PostgreSQL store needs a key in OAUTH2_STORE_KEY (or OAUTH2_STORE_PLAINTEXT=1 to keep tokens readable to whoever reads the table)"
                )
            }
            return try database.store(binding: binding, table: table, key: key, timeout: settings.timeout, logger: logger)
        }
    }

    /// The store, for a command that only reads it: a file store needs no
    /// provider, a PostgreSQL store needs the client id and token endpoint.
    func storeForReading() throws -> any TokenStore {
        guard case .postgres = settings.store else { return try store(for: nil) }
        guard let clientID = settings.clientID, let tokenURL = settings.tokenURL else {
            throw UsageError("a PostgreSQL store holds one provider's tokens: give --client-id and --token-url")
        }
        return try store(for: TokenBinding(tokenEndpoint: tokenURL.absoluteString, clientID: clientID))
    }

    /// The client of the settings' account, its configuration completed from
    /// the issuer's metadata when `--issuer` is given (unless `discover` is
    /// false: then nothing is fetched, and ID tokens could not be verified).
    ///
    /// `dpop` binds the tokens of a grant this client starts to a new DPoP
    /// key (a grant command's `--dpop`); a stored token that is bound is
    /// presented with proofs without it.
    ///
    /// - Throws: ``UsageError`` without a client id or a token endpoint;
    ///   `OAuth2Error` when the metadata cannot be fetched or the configuration is invalid.
    /// `configure` adjusts the configuration (a command's own options) before the provider is made.
    func client(
        allowsPasswordGrant: Bool = false, discover: Bool = true, dpop: DPoPSettings? = nil,
        configure: ((inout OAuth2Configuration) throws -> Void)? = nil
    ) async throws -> OAuth2Client {
        guard let clientID = settings.clientID else {
            throw UsageError("the client id is needed: --client-id (or OAUTH2_CLIENT_ID)")
        }
        var endpoints = (
            authorize: settings.authorizeURL, token: settings.tokenURL,
            revoke: settings.revokeURL, device: settings.deviceURL
        )
        var requiresIssuer = false
        var pkceMethods: [String] = []
        var openID: OpenIDSettings?
        var metadata: AuthorizationServerMetadata?
        if discover, let issuer = settings.issuer {
            logger.debug("discovering the issuer", metadata: ["oauth2.issuer": "\(issuer)"])
            let discovered = try await MetadataCache(transport: transport).metadata(
                issuer: issuer, issuerRule: settings.issuerRule, timeout: settings.timeout)
            metadata = discovered
            // With a client certificate, the provider's mutual TLS aliases (RFC 8705 §5) where it has them.
            let mutualTLS = settings.clientCertificate != nil
            endpoints.authorize = endpoints.authorize ?? discovered.authorizationEndpoint
            endpoints.token =
                endpoints.token ?? discovered.endpoint(discovered.tokenEndpoint, named: "token_endpoint", mutualTLS: mutualTLS)
            endpoints.revoke =
                endpoints.revoke ?? discovered.endpoint(discovered.revocationEndpoint, named: "revocation_endpoint", mutualTLS: mutualTLS)
            endpoints.device =
                endpoints.device
                ?? discovered.endpoint(discovered.deviceAuthorizationEndpoint, named: "device_authorization_endpoint", mutualTLS: mutualTLS)
            requiresIssuer = discovered.authorizationResponseIssParameterSupported
            pkceMethods = discovered.codeChallengeMethodsSupported
            // An OpenID provider: ID tokens are verified against its keys.
            openID = OpenIDSettings(metadata: discovered)
            openID?.userinfoEndpoint = discovered.endpoint(discovered.userinfoEndpoint, named: "userinfo_endpoint", mutualTLS: mutualTLS)
            openID?.allowedHostedDomains = settings.hostedDomains
        }
        guard let tokenURL = endpoints.token else {
            throw UsageError("the token endpoint is needed: --token-url (or OAUTH2_TOKEN_URL), or --issuer whose metadata names it")
        }
        var configuration = try OAuth2Configuration(
            clientID: clientID,
            clientSecret: settings.clientSecret,
            authorizationEndpoint: endpoints.authorize,
            tokenEndpoint: tokenURL,
            revocationEndpoint: endpoints.revoke,
            deviceAuthorizationEndpoint: endpoints.device,
            defaultScopes: settings.scopes,
            clientAuthentication: settings.authentication,
            allowsPasswordGrant: allowsPasswordGrant,
            // The document's issuer: the template, when the rule accepted one for the issuer asked for.
            issuer: metadata?.issuer ?? settings.issuer,
            requiresIssuerInRedirect: requiresIssuer,
            requestTimeout: settings.timeout,
            openID: openID,
            resources: settings.resources,
            audience: settings.audience,
            clientAssertionKey: settings.clientKey,
            clientCertificate: settings.clientCertificate,
            signedClientSecret: settings.signedClientSecret
        )
        // A provider that lists PKCE methods without S256 gets no authorization request (the library refuses it).
        configuration.codeChallengeMethodsSupported = pkceMethods
        configuration.issuerRule = settings.issuerRule
        configuration.dpop = dpop
        if let metadata {
            // A provider that requires pushed (RFC 9126) or signed (RFC 9101) requests gets them with no flag.
            configuration.pushedAuthorizationRequestEndpoint = metadata.endpoint(
                metadata.pushedAuthorizationRequestEndpoint, named: "pushed_authorization_request_endpoint",
                mutualTLS: settings.clientCertificate != nil)
            configuration.requiresPushedAuthorizationRequests = metadata.requirePushedAuthorizationRequests
            configuration.requiresSignedRequestObject = metadata.requireSignedRequestObject
            configuration.requestURIParameterSupported = metadata.requestURIParameterSupported
            configuration.requestObjectSigningAlgValuesSupported = metadata.requestObjectSigningAlgValuesSupported
        }
        try configure?(&configuration)
        let provider = try OAuth2Provider(
            configuration: configuration,
            store: try store(for: configuration.binding),
            transport: transport,
            logger: logger
        )
        for entry in loadedNonces { provider.dpopNonces.update(entry.nonce, for: entry.origin) }
        let client = provider.client(account: settings.account)
        clients.withLock { $0.append(client) }
        return client
    }

    /// A command is done: a token the provider issued that the store could
    /// not save (a full disk) is saved again, for up to `--timeout`, while
    /// the account stays locked (no other process spends the refresh token
    /// the provider rotated); if it still cannot be saved the command fails
    /// with `store_error`, since the process is about to take the only copy
    /// of it away.
    private func saveWhatTheStoreRefused() async throws {
        for client in clients.withLock({ $0 }) {
            do {
                do {
                    try await client.saveUnsavedToken()
                } catch {
                    StandardError.line(
                        "The token store cannot save the new token (\(error.code)); trying again for up to \(settings.timeout.components.seconds) s while the account stays locked."
                    )
                    try await client.saveUnsavedToken(waitingUpTo: settings.timeout)
                }
            } catch {
                throw OAuth2Error(
                    code: error.code,
                    message:
                        "the command succeeded, but the new token could not be saved: \(error.message). The provider may already have replaced the stored refresh token; if the next command fails, sign in again"
                )
            }
        }
    }
}
