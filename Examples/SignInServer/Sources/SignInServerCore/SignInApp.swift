import Foundation
import Hummingbird
import Logging
import OAuth2

/// The example app: "Sign in with the provider" on Hummingbird, every OAuth
/// step done by the framework.
///
/// One ``OAuth2Provider`` for the whole app (configuration, one
/// ``CurlTransport``, one ``FileTokenStore``), and a client per account
/// made per request: clients are cheap, and refreshes of one account are
/// single-flight across all of them because the provider coordinates them.
/// Sessions live in a ``SessionStore``, in memory by default.
public final class SignInApp: Sendable {
    /// The configuration the app was started with.
    public let configuration: SignInConfiguration
    /// The framework's provider, shared by every request.
    public let provider: OAuth2Provider
    /// The visitors' sessions.
    public let sessions: any SessionStore
    /// The app's logger; it never receives a token, code or secret.
    public let logger: Logger

    let transport: CurlTransport
    let cookie: SessionCookie

    /// Opens the token store and creates the transport and the provider.
    ///
    /// - Throws: ``OAuth2Error`` `store_error` when the store's directory is
    ///   unusable (another owner, open to others), or the configuration's error.
    public init(
        configuration: SignInConfiguration,
        sessions: any SessionStore = InMemorySessionStore(),
        logger: Logger = Logger(label: "SignInServer")
    ) throws(OAuth2Error) {
        let encryption: FileTokenStore.Encryption = configuration.storeKey.map { .aesGCM($0) } ?? .plaintext
        let store = try FileTokenStore(directory: configuration.storeDirectory, encryption: encryption)
        let transport = CurlTransport()
        // Should this throw, the transport is released and stops its thread on its own.
        provider = try OAuth2Provider(configuration: configuration.oauth2, store: store, transport: transport, logger: logger)
        self.configuration = configuration
        self.sessions = sessions
        self.logger = logger
        self.transport = transport
        self.cookie = SessionCookie(secure: configuration.isServedOverHTTPS)
    }

    /// The Hummingbird application, listening on the configured host and port.
    ///
    /// Run it with `runService()` (stops on SIGINT/SIGTERM) or `run()`
    /// (stops when its task is cancelled), then call ``shutdown()``.
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
        return Application(
            router: router,
            configuration: ApplicationConfiguration(address: .hostname(configuration.host, port: configuration.port)),
            onServerRunning: { channel in await onServerRunning(channel.localAddress?.port ?? 0) },
            logger: logger
        )
    }

    /// Closes the transport's connections; call it once the application has stopped.
    public func shutdown() async {
        await transport.shutdown()
    }
}
