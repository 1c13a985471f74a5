import Logging
import OAuth2

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What one run of a command works with: the settings, the process's one
/// transport, the logger, and from them the store and the client.
struct Session: Sendable {
    let settings: Settings
    let transport: CurlTransport
    let logger: Logger
    /// The clients this run made, so that a token the store refused is saved
    /// (or reported) before the process exits with it.
    private let clients = LockedValue<[OAuth2Client]>([])

    /// Resolves the options, creates the transport, runs `body` and shuts the
    /// transport down before returning or throwing.
    static func run<Result>(_ options: CommonOptions, _ body: (Session) async throws -> Result) async throws -> Result {
        let settings = try Settings(options)
        var logger = Logger(label: "oauth2") { label in
            settings.verbose ? StreamLogHandler.standardError(label: label) as any LogHandler : SwiftLogNoOpLogHandler()
        }
        logger.logLevel = settings.verbose ? Logger.Level.debug : Logger.Level.critical
        let transport = CurlTransport(configuration: CurlTransport.Configuration(timeout: settings.timeout, caFile: settings.caFile))
        let session = Session(settings: settings, transport: transport, logger: logger)
        do {
            let result = try await body(session)
            try await session.saveWhatTheStoreRefused()
            await transport.shutdown()
            return result
        } catch {
            await transport.shutdown()
            throw error
        }
    }

    /// The token store: the settings' directory, encrypted when `OAUTH2_STORE_KEY` holds a key.
    func store() throws(OAuth2Error) -> FileTokenStore {
        let encryption: FileTokenStore.Encryption
        if EnvironmentVariables.value("OAUTH2_STORE_KEY") != nil {
            encryption = .aesGCM(try FileTokenStore.EncryptionKey.fromEnvironment("OAUTH2_STORE_KEY"))
        } else {
            encryption = .plaintext
        }
        return try FileTokenStore(directory: settings.storeDirectory, encryption: encryption)
    }

    /// The client of the settings' account, its configuration completed from
    /// the issuer's metadata when `--issuer` is given.
    ///
    /// - Throws: ``UsageError`` without a client id or a token endpoint;
    ///   `OAuth2Error` when the metadata cannot be fetched or the configuration is invalid.
    func client(allowsPasswordGrant: Bool = false) async throws -> OAuth2Client {
        guard let clientID = settings.clientID else {
            throw UsageError("the client id is needed: --client-id (or OAUTH2_CLIENT_ID)")
        }
        var endpoints = (
            authorize: settings.authorizeURL, token: settings.tokenURL,
            revoke: settings.revokeURL, device: settings.deviceURL
        )
        var requiresIssuer = false
        if let issuer = settings.issuer {
            logger.debug("fetching the issuer's metadata", metadata: ["oauth2.issuer": "\(issuer)"])
            let metadata = try await AuthorizationServerMetadata.fetch(issuer: issuer, transport: transport, timeout: settings.timeout)
            endpoints.authorize = endpoints.authorize ?? metadata.authorizationEndpoint
            endpoints.token = endpoints.token ?? metadata.tokenEndpoint
            endpoints.revoke = endpoints.revoke ?? metadata.revocationEndpoint
            endpoints.device = endpoints.device ?? metadata.deviceAuthorizationEndpoint
            requiresIssuer = metadata.authorizationResponseIssParameterSupported
        }
        guard let tokenURL = endpoints.token else {
            throw UsageError("the token endpoint is needed: --token-url (or OAUTH2_TOKEN_URL), or --issuer whose metadata names it")
        }
        let configuration = try OAuth2Configuration(
            clientID: clientID,
            clientSecret: settings.clientSecret,
            authorizationEndpoint: endpoints.authorize,
            tokenEndpoint: tokenURL,
            revocationEndpoint: endpoints.revoke,
            deviceAuthorizationEndpoint: endpoints.device,
            defaultScopes: settings.scopes,
            clientAuthentication: settings.authentication,
            allowsPasswordGrant: allowsPasswordGrant,
            issuer: settings.issuer,
            requiresIssuerInRedirect: requiresIssuer,
            requestTimeout: settings.timeout
        )
        let client = try OAuth2Client(
            configuration: configuration,
            account: settings.account,
            store: try store(),
            transport: transport,
            logger: logger
        )
        clients.withLock { $0.append(client) }
        return client
    }

    /// A command is done: a token the provider issued that the store could
    /// not save (a full disk) is tried once more, and if it still cannot be
    /// saved the command fails with `store_error`, since the process is about
    /// to take the only copy of it away.
    private func saveWhatTheStoreRefused() async throws {
        for client in clients.withLock({ $0 }) {
            do {
                try await client.saveUnsavedToken()
            } catch {
                throw OAuth2Error(
                    code: error.code,
                    message: "the command succeeded, but the new token could not be saved: \(error.message). The provider may already have replaced the stored refresh token; if the next command fails, sign in again"
                )
            }
        }
    }
}
