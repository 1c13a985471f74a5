#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

public import Logging

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
    /// The transport every request goes through: the one given, behind a
    /// wrapper that sets ``HTTPTransportRequest/connectsOnlyToPublicAddresses``
    /// when the configuration's ``OAuth2Configuration/connectsOnlyToPublicAddresses`` is on.
    public let transport: any HTTPTransport
    /// Where tokens are kept.
    public let store: any TokenStore
    /// The clock expiry is read from and device polling sleeps on.
    public let clock: any OAuth2Clock
    /// The logger; the framework logs at debug and trace only, never a secret.
    public let logger: Logger
    /// Where metrics and spans go: the app's bootstrapped backends unless given others.
    public let telemetry: OAuth2Telemetry

    let refreshCoordinator = RefreshCoordinator()
    let usedStates = UsedStates()
    /// The DPoP nonces the provider's endpoints and the resource servers its
    /// clients call last gave, per origin; shared by all its clients.
    package let dpopNonces = DPoPNonceCache()
    /// The accounts' tokens: loading, saving, keeping what the store refused,
    /// and the account lock; where "a token the provider issued is never dropped" holds.
    let vault: AccountVault
    /// Grant types whose tokens can be renewed by running the grant again.
    let renewableGrantTypes: Set<String>
    /// `configuration.expirySkew` in seconds, converted once: every signed
    /// request compares its token's expiry against it, and the conversion
    /// divides a 128-bit count of attoseconds.
    let expirySkewSeconds: Double
    /// OpenID Connect: the ID token verifier and the provider's key set, when configured.
    let idTokenVerifier: IDTokenVerifier?
    let keySet: KeySetCache?
    /// The key sets of ``OpenIDSettings/claimsProviders``, in their order: fetched when a claim source first needs one.
    let claimsProviderKeys: [KeySetCache]
    /// The `jti`s of the back-channel logout tokens this provider accepted lately.
    let logoutTokenReplays = LogoutTokenReplayCache()

    /// Creates a provider.
    ///
    /// - Parameters:
    ///   - configuration: the provider's endpoints, client and policies; validated here.
    ///   - store: defaults to an ``InMemoryTokenStore``.
    ///   - transport: typically one ``CurlTransport`` for the whole app; the caller shuts it down.
    ///   - clock: where expiry is read and device polling sleeps; tests pass a manual one.
    ///   - logger: defaults to a logger that discards everything.
    ///   - telemetry: defaults to the process's swift-metrics and
    ///     swift-distributed-tracing backends (no-ops until bootstrapped).
    /// - Throws: ``OAuth2Error`` when the configuration is invalid (`insecure_endpoint`, `invalid_configuration`).
    public init(
        configuration: OAuth2Configuration,
        store: any TokenStore = InMemoryTokenStore(),
        transport: any HTTPTransport,
        clock: any OAuth2Clock = SystemClock(),
        logger: Logger = Logger(label: "swift-oauth2", factory: { _ in SwiftLogNoOpLogHandler() }),
        telemetry: OAuth2Telemetry = .global
    ) throws(OAuth2Error) {
        try configuration.validate()
        self.configuration = configuration
        self.store = store
        // Everything the provider sends goes through it: wrapped here, no request can leave the rule out.
        let transport = PublicAddressTransport.wrapping(transport, if: configuration.connectsOnlyToPublicAddresses)
        self.transport = transport
        self.clock = clock
        self.logger = logger
        self.telemetry = telemetry
        vault = AccountVault(store: store, configuration: configuration, clock: clock, logger: logger, telemetry: telemetry)
        self.renewableGrantTypes = configuration.renewableGrantTypes
        expirySkewSeconds = configuration.expirySkew.timeInterval
        if let openID = configuration.openID, let issuer = configuration.issuer {
            idTokenVerifier = IDTokenVerifier(
                settings: openID, issuer: issuer, clientID: configuration.clientID, issuerRule: configuration.issuerRule)
            keySet = KeySetCache(
                settings: openID,
                transport: transport,
                clock: clock,
                timeout: configuration.requestTimeout,
                maxSize: configuration.maxResponseSize
            )
        } else {
            idTokenVerifier = nil
            keySet = nil
        }
        claimsProviderKeys = (configuration.openID?.claimsProviders ?? []).map { claimsProvider in
            KeySetCache(
                settings: OpenIDSettings(
                    jwksURI: claimsProvider.jwksURI,
                    keySetMaxAge: configuration.openID?.keySetMaxAge ?? .seconds(600),
                    keySetRefetchInterval: configuration.openID?.keySetRefetchInterval ?? .seconds(30)
                ),
                transport: transport,
                clock: clock,
                timeout: configuration.requestTimeout,
                maxSize: configuration.maxResponseSize
            )
        }
    }

    /// A client for one account, such as a user id.
    ///
    /// Cheap: create one per request if that suits the app.
    public func client(account: String = "default", delegate: (any OAuth2ClientDelegate)? = nil) -> OAuth2Client {
        OAuth2Client(provider: self, account: account, delegate: delegate)
    }

    // MARK: - I/O with typed errors

    /// Sends a request to the provider, translating transport failures into
    /// ``OAuth2Error``; with the configuration's client certificate when the
    /// request names none, so that every endpoint sees the same client.
    func perform(_ request: HTTPTransportRequest) async throws(OAuth2Error) -> HTTPTransportResponse {
        guard request.clientCertificate == nil, let certificate = configuration.clientCertificate else {
            return try await OAuth2Error.performing(request, on: transport)
        }
        var presenting = request
        presenting.clientCertificate = certificate
        return try await OAuth2Error.performing(presenting, on: transport)
    }
}
