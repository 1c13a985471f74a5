import Logging

/// One provider as an app uses it: the configuration, the transport, the
/// token store, a clock and a logger, shared by every ``OAuth2Client``.
///
/// Create one per provider at start-up, then a cheap client per account
/// (`provider.client(account: userID)`), as many and as short-lived as you
/// like: refresh is single-flight per account across all the clients of a
/// provider, and a redirect's `state` is accepted once across all of them.
/// Thread-safe.
public final class OAuth2Provider: Sendable {
    /// The configuration, validated.
    public let configuration: OAuth2Configuration
    /// The transport every request goes through.
    public let transport: any HTTPTransport
    /// Where tokens are kept.
    public let store: any TokenStore
    /// The clock expiry is read from.
    public let clock: any OAuth2Clock
    /// The logger; the framework logs at debug and trace only, never a secret.
    public let logger: Logger

    let refreshCoordinator = RefreshCoordinator()
    let usedStates = UsedStates()

    /// Creates a provider.
    ///
    /// - Parameters:
    ///   - store: defaults to an ``InMemoryTokenStore``.
    ///   - transport: typically one ``CurlTransport`` for the whole app; the caller shuts it down.
    ///   - logger: defaults to a logger that discards everything.
    /// - Throws: ``OAuth2Error`` when the configuration is invalid (`insecure_endpoint`, `invalid_configuration`).
    public init(
        configuration: OAuth2Configuration,
        store: any TokenStore = InMemoryTokenStore(),
        transport: any HTTPTransport,
        clock: any OAuth2Clock = SystemClock(),
        logger: Logger = Logger(label: "swift-oauth2", factory: { _ in SwiftLogNoOpLogHandler() })
    ) throws(OAuth2Error) {
        try configuration.validate()
        self.configuration = configuration
        self.store = store
        self.transport = transport
        self.clock = clock
        self.logger = logger
    }

    /// A client for one account, such as a user id.
    ///
    /// Cheap: create one per request if that suits the app.
    public func client(account: String = "default", delegate: (any OAuth2ClientDelegate)? = nil) -> OAuth2Client {
        OAuth2Client(provider: self, account: account, delegate: delegate)
    }

    // MARK: - I/O with typed errors

    /// Sends a request, translating transport failures into ``OAuth2Error``.
    func perform(_ request: HTTPRequest) async throws(OAuth2Error) -> HTTPResponse {
        try await OAuth2Error.performing(request, on: transport)
    }

    func load(account: String) async throws(OAuth2Error) -> AccessToken? {
        do {
            return try await store.load(account: account)
        } catch {
            throw OAuth2Error(storeError: error, doing: "read")
        }
    }

    func save(_ token: AccessToken, account: String) async throws(OAuth2Error) {
        do {
            try await store.save(token, account: account)
        } catch {
            throw OAuth2Error(storeError: error, doing: "write")
        }
    }

    func delete(account: String) async throws(OAuth2Error) {
        do {
            try await store.delete(account: account)
        } catch {
            throw OAuth2Error(storeError: error, doing: "delete")
        }
    }
}

extension OAuth2Error {
    /// Sends a request, translating transport failures into ``OAuth2Error``.
    static func performing(_ request: HTTPRequest, on transport: any HTTPTransport) async throws(OAuth2Error) -> HTTPResponse {
        do {
            return try await transport.send(request)
        } catch let error as HTTPTransportError {
            throw OAuth2Error(transportError: error)
        } catch let error as OAuth2Error {
            throw error
        } catch is CancellationError {
            throw OAuth2Error(code: .cancelled, message: "the request was cancelled")
        } catch {
            throw OAuth2Error(code: .transportError, message: "the request failed: \(type(of: error))")
        }
    }

    /// The error a transport failure becomes: `timeout`, `tls_error`,
    /// `response_too_large`, `cancelled` or `transport_error`.
    init(transportError error: HTTPTransportError) {
        let code: Code
        switch error.kind {
        case .timeout: code = .timeout
        case .tlsFailed: code = .tlsError
        case .responseTooLarge: code = .responseTooLarge
        case .cancelled: code = .cancelled
        case .connectFailed, .shutDown, .unsupportedURL, .invalidRequest, .connectionLost, .tooManyRedirects, .other:
            code = .transportError
        }
        self.init(code: code, message: error.message)
    }

    /// The error a store failure becomes: a store's own `store_error` as it is, anything else wrapped.
    init(storeError error: any Error, doing action: String) {
        if let error = error as? OAuth2Error {
            self = error
        } else {
            self.init(code: .storeError, message: "could not \(action) the token store: \(type(of: error))")
        }
    }
}
