import Foundation
import Hummingbird
import Logging
import OAuth2
import OAuth2Postgres
import PostgresNIO
import ServiceLifecycle

/// The example app: "Sign in with the provider" on Hummingbird, every OAuth
/// step done by the framework.
///
/// One ``OAuth2Provider`` for the whole app (configuration, one
/// ``CurlTransport``, one token store), and a client per account made per
/// request: clients are cheap, and refreshes of one account are
/// single-flight across all of them because the provider coordinates them.
///
/// Alone, the app keeps tokens in a ``FileTokenStore`` and sessions in an
/// ``InMemorySessionStore``. With a database (``SignInConfiguration/database``)
/// it keeps both in PostgreSQL (``PostgresTokenStore``,
/// ``PostgresSessionStore``), so that several instances on that database
/// serve any request: a user signed in through one is signed in on all,
/// refreshes of a token are single-flight across all of them (the token
/// store's lock), and signing out through one ends the sessions on all.
public final class SignInApp: Sendable {
    /// The configuration the app was started with.
    public let configuration: SignInConfiguration
    /// The framework's provider, shared by every request.
    public let provider: OAuth2Provider
    /// Sign in with Apple's provider, sharing the transport and the token store, when configured.
    public let apple: OAuth2Provider?
    /// The visitors' sessions.
    public let sessions: any SessionStore
    /// The app's logger; it never receives a token, code, session id or secret.
    public let logger: Logger

    let transport: CurlTransport
    let cookie: SessionCookie
    /// The database client, run with the application, when there is a database.
    let postgres: PostgresClient?

    /// Opens the token store and creates the transport and the provider.
    ///
    /// - Parameter sessions: where sessions live; by default in PostgreSQL
    ///   when the configuration names a database, else in memory.
    /// - Throws: ``OAuth2Error`` `store_error` when the store's directory is
    ///   unusable (another owner, open to others), `invalid_configuration`
    ///   for a database without a key or bad table names, or the configuration's error.
    public init(
        configuration: SignInConfiguration,
        sessions: (any SessionStore)? = nil,
        logger: Logger = Logger(label: "SignInServer")
    ) throws(OAuth2Error) {
        let store: any TokenStore
        let sessionStore: any SessionStore
        if let database = configuration.database {
            guard let key = configuration.storeKey else {
                throw OAuth2Error(code: .invalidConfiguration, message: "the tokens in the database need a key (storeKey)")
            }
            let postgres = PostgresClient(configuration: database.client, backgroundLogger: logger)
            store = try PostgresTokenStore(
                client: postgres, configuration: configuration.oauth2, table: database.tokenTable, encryption: .aesGCM(key), logger: logger
            )
            if let sessions {
                sessionStore = sessions
            } else {
                sessionStore = try PostgresSessionStore(client: postgres, table: database.sessionTable, logger: logger)
            }
            self.postgres = postgres
        } else if let directory = configuration.storeDirectory {
            let encryption: FileTokenStore.Encryption = configuration.storeKey.map { .aesGCM($0) } ?? .plaintext
            store = try FileTokenStore(directory: directory, encryption: encryption)
            sessionStore = sessions ?? InMemorySessionStore()
            self.postgres = nil
        } else {
            throw OAuth2Error(code: .invalidConfiguration, message: "the configuration names neither a token directory nor a database")
        }
        let transport = CurlTransport()
        // Should this throw, the transport is released and stops its thread on its own.
        provider = try OAuth2Provider(configuration: configuration.oauth2, store: store, transport: transport, logger: logger)
        apple = try configuration.apple.map { (apple) throws(OAuth2Error) in
            try OAuth2Provider(configuration: apple, store: store, transport: transport, logger: logger)
        }
        self.configuration = configuration
        self.sessions = sessionStore
        self.logger = logger
        self.transport = transport
        self.cookie = SessionCookie(secure: configuration.isServedOverHTTPS)
    }

    /// The Hummingbird application, listening on the configured host and
    /// port, with the database client as one of its services when there is
    /// a database (it stops after the server).
    ///
    /// Run it with `runService()` (stops on SIGINT/SIGTERM) or `run()`
    /// (stops when its task is cancelled), then call ``shutdown()``. Make
    /// and run one application per app: a database client runs once.
    ///
    /// - Parameter onServerRunning: told the port once the server listens.
    public func makeApplication(
        onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
    ) -> some ApplicationProtocol {
        let router = Router()
        router.middlewares.add(RequestLogMiddleware())
        router.middlewares.add(SessionStoreFailureMiddleware())
        let routes = SignInRoutes(app: self)
        router.get("/", use: routes.home)
        router.get("/login", use: routes.login)
        router.get(RouterPath(SignInConfiguration.callbackPath), use: routes.callback)
        router.get("/me", use: routes.me)
        router.post("/logout", use: routes.logout)
        if let apple {
            let appleRoutes = AppleSignInRoutes(app: self, apple: apple)
            router.get("/login/apple", use: appleRoutes.login)
            router.post(RouterPath(SignInConfiguration.appleCallbackPath), use: appleRoutes.callback)
            router.post(RouterPath(SignInConfiguration.appleFinishPath), use: appleRoutes.finish)
        }
        let services: [any Service] = postgres.map { [$0] } ?? []
        return Application(
            router: router,
            configuration: ApplicationConfiguration(address: .hostname(configuration.host, port: configuration.port)),
            services: services,
            onServerRunning: { channel in await onServerRunning(channel.localAddress?.port ?? 0) },
            logger: logger
        )
    }

    /// The provider whose tokens `account` holds: Apple's for a user Apple's
    /// ID token named, else the provider's.
    func provider(for account: String) -> OAuth2Provider {
        if let apple, let issuer = apple.configuration.issuer, AccountKey.isSubject(account, of: issuer) {
            return apple
        }
        return provider
    }

    /// Closes the transport's connections; call it once the application has stopped.
    public func shutdown() async {
        await transport.shutdown()
    }
}
