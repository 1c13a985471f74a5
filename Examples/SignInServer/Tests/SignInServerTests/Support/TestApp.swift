import Foundation
import Hummingbird
import Logging
import OAuth2
import ServiceLifecycle
@testable import SignInServerCore
#if canImport(Glibc)
import Glibc
#endif

/// The example app running in this process on 127.0.0.1, against a local
/// provider, with its own encrypted token store in a temporary directory, or
/// with tokens and sessions in PostgreSQL tables (``Setup/database``), which
/// several instances can share.
struct TestApp: Sendable {
    let app: SignInApp
    let provider: ProviderEnvironment
    let baseURL: URL
    let storeDirectory: String
    private let services: ServiceGroup
    private let task: Task<Void, any Error>

    /// The app's token store, for checking what it holds.
    var store: any TokenStore { app.provider.store }

    /// How a test app is set up, beyond its provider.
    struct Setup: Sendable {
        var expirySkew = 60
        var requireIssuer = true
        /// The provider's client the app signs in as: `confidential`, or
        /// `public` (no secret; a suite that counts the provider's token
        /// requests uses it, as no other suite does).
        var client = "confidential"
        /// Tokens and sessions in these PostgreSQL tables; files and memory when `nil`.
        var database: TestDatabase?
        /// The token key, 64 hex digits: instances on one database share it.
        var key = TestApp.randomKey()
        /// The port of the public redirect URI, when it is not the app's own:
        /// instances behind one address, as behind a load balancer.
        var publicPort: Int?
        /// OpenID Connect, as an operator would turn it on: discovery from the
        /// issuer, ``TestApp/openIDScopes``, no authorize, token or API URL
        /// (the revocation URL stays: the discovery document has none).
        var openID = false
        /// Sign in with Apple beside the provider, against this Apple-behaving provider.
        var apple: AppleEnvironment?
    }

    /// The scopes an OpenID Connect test app asks for.
    static let openIDScopes = "openid profile email read"

    /// Runs `body` with a freshly started app, stopping it afterwards whatever happens.
    static func with<T: Sendable>(
        _ provider: ProviderEnvironment,
        expirySkew: Int = 60,
        requireIssuer: Bool = true,
        _ body: (TestApp) async throws -> T
    ) async throws -> T {
        try await with(provider, setup: Setup(expirySkew: expirySkew, requireIssuer: requireIssuer), body)
    }

    /// Runs `body` with a freshly started app, stopping it afterwards whatever happens.
    static func with<T: Sendable>(
        _ provider: ProviderEnvironment,
        setup: Setup,
        _ body: (TestApp) async throws -> T
    ) async throws -> T {
        let app = try await start(provider, setup: setup)
        do {
            let result = try await body(app)
            await app.stop()
            return result
        } catch {
            await app.stop()
            throw error
        }
    }

    /// A fresh 256-bit token key, as 64 hex digits.
    static func randomKey() -> String {
        (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
    }

    /// The environment the app reads, as an operator would set it.
    static func environment(_ provider: ProviderEnvironment, port: Int, storeDirectory: String, setup: Setup) throws -> [String: String] {
        let client = try requireValue(provider.clients[setup.client], "the provider has no \(setup.client) client")
        var environment = [
            "SIGNIN_CLIENT_ID": client.clientID,
            "SIGNIN_AUTHORIZE_URL": provider.endpoints.authorize.absoluteString,
            "SIGNIN_TOKEN_URL": provider.endpoints.token.absoluteString,
            "SIGNIN_REVOKE_URL": provider.endpoints.revoke.absoluteString,
            "SIGNIN_ISSUER": provider.issuer,
            "SIGNIN_REQUIRE_ISSUER": setup.requireIssuer ? "1" : "0",
            "SIGNIN_REDIRECT_URI": "http://127.0.0.1:\(setup.publicPort ?? port)/callback",
            "SIGNIN_API_URL": provider.endpoints.apiMe.absoluteString,
            "SIGNIN_STORE_KEY": setup.key,
            "SIGNIN_HOST": "127.0.0.1",
            "SIGNIN_PORT": "\(port)",
            "SIGNIN_EXPIRY_SKEW": "\(setup.expirySkew)",
        ]
        if setup.openID {
            environment["SIGNIN_AUTHORIZE_URL"] = nil
            environment["SIGNIN_TOKEN_URL"] = nil
            environment["SIGNIN_API_URL"] = nil
            environment["SIGNIN_DISCOVER"] = "1"
            environment["SIGNIN_SCOPES"] = openIDScopes
        }
        if !client.clientSecret.isEmpty {
            environment["SIGNIN_CLIENT_SECRET"] = client.clientSecret
        }
        if let apple = setup.apple {
            environment.merge(apple.environment) { _, new in new }
        }
        if let database = setup.database {
            environment.merge(database.environment) { _, new in new }
        } else {
            environment["SIGNIN_STORE_DIR"] = storeDirectory
        }
        return environment
    }

    /// Starts an app; the caller stops it.
    static func start(_ provider: ProviderEnvironment, setup: Setup) async throws -> TestApp {
        // The redirect URI names the port, so the port is chosen first; another
        // process may take it in between, hence a few tries.
        var lastError: any Error = TestFailure("the app did not start")
        for _ in 0..<3 {
            let port = try freePort()
            let storeDirectory = FileManager.default.temporaryDirectory
                .appendingPathComponent("signin-test-\(UUID().uuidString)").path
            let configuration = try await SignInConfiguration.load(
                environment: environment(provider, port: port, storeDirectory: storeDirectory, setup: setup),
                transport: TestBrowser.transport
            )
            var logger = Logger(label: "SignInServerTests")
            logger.logLevel = .warning
            let app = try SignInApp(configuration: configuration, logger: logger)
            let (running, continuation) = AsyncStream<Int>.makeStream()
            let application = app.makeApplication { port in continuation.yield(port) }
            // A service group, so that the test can stop the server gracefully, as SIGTERM would.
            let services = ServiceGroup(configuration: .init(services: [application], logger: logger))
            let task = Task {
                defer { continuation.finish() }
                try await services.run()
            }
            var iterator = running.makeAsyncIterator()
            if let listening = await iterator.next(), listening == port {
                return TestApp(
                    app: app,
                    provider: provider,
                    baseURL: try requireValue(URL(string: "http://127.0.0.1:\(port)"), "bad base URL"),
                    storeDirectory: storeDirectory,
                    services: services,
                    task: task
                )
            }
            await services.triggerGracefulShutdown()
            if case .failure(let error) = await task.result { lastError = error }
            await app.shutdown()
            try? FileManager.default.removeItem(atPath: storeDirectory)
        }
        throw lastError
    }

    /// Stops the server, closes the transport and removes the token store.
    func stop() async {
        await services.triggerGracefulShutdown()
        _ = await task.result
        await app.shutdown()
        try? FileManager.default.removeItem(atPath: storeDirectory)
    }

    /// A browser with an empty cookie jar.
    func browser() -> TestBrowser {
        TestBrowser(app: self)
    }

    /// Signs `user` in with `browser` and returns the provider's redirect (the callback URL) it used.
    @discardableResult
    func signIn(_ browser: TestBrowser, as user: String) async throws -> String {
        let callback = try await startSignIn(browser, as: user)
        let response = try await browser.follow(callback, at: self)
        guard response.status == 303, response.location == "/" else {
            throw TestFailure("the callback answered \(response.status): \(response.bodyText)")
        }
        return callback
    }

    /// Signs `user` in with `browser`, then waits until the provider no longer
    /// accepts the access token (a short-lived provider's): returns that token.
    func signInAndLetTheTokenExpire(_ browser: TestBrowser, as user: String) async throws -> AccessToken {
        try await signIn(browser, as: user)
        let token = try requireValue(try await storedToken(of: user), "no token stored for \(user)")
        let expiry = try requireValue(token.expiresAt, "the token has no expiry")
        try await Task.sleep(for: .seconds(max(0, expiry.timeIntervalSinceNow) + 1.5))
        guard !(try await providerAccepts(token)) else {
            throw TestFailure("the provider still accepts the token after its expiry")
        }
        return token
    }

    /// Starts a sign-in and lets the user consent at the provider, but does not deliver the callback.
    func startSignIn(_ browser: TestBrowser, as user: String, deny: Bool = false) async throws -> String {
        let login = try await browser.get("/login", at: self)
        guard login.status == 303, let authorizeURL = login.location else {
            throw TestFailure("/login answered \(login.status)")
        }
        return try await ProviderBrowser.authorize(authorizeURL, as: try provider.user(user), provider: provider, deny: deny)
    }

    /// The token the app stores for a provider user.
    func storedToken(of user: String) async throws -> AccessToken? {
        try await store.load(account: AccountKey.user(user))
    }

    /// The token the app stores for an OpenID Connect user of this provider, by `sub`.
    func storedToken(subject: String) async throws -> AccessToken? {
        try await store.load(account: AccountKey.subject(issuer: provider.issuer, subject: subject))
    }

    /// Calls the provider's API directly with an access token: whether the provider still accepts it.
    func providerAccepts(_ token: AccessToken) async throws -> Bool {
        let request = HTTPTransportRequest(url: provider.endpoints.apiMe, headers: [.authorization: "Bearer \(token.accessToken.value)"])
        let response = try await TestBrowser.transport.send(request)
        return response.status == 200
    }
}

/// A TCP port on 127.0.0.1 that was free a moment ago.
func freePort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw TestFailure("socket() failed") }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = 0
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let bound = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard bound == 0 else { throw TestFailure("bind() failed") }
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let named = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
    }
    guard named == 0 else { throw TestFailure("getsockname() failed") }
    return Int(UInt16(bigEndian: address.sin_port))
}
