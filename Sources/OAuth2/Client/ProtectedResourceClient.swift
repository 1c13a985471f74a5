#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif
public import Logging

/// Where a client that configures itself sends its user to sign in: a CLI's
/// loopback receiver (``OAuth2Loopback``), a server's redirect.
public protocol AuthorizationRedirectHandler: Sendable {
    /// The redirect URI the client registers and sends.
    var redirectURI: URL { get }
    /// Sends the user to `pending.url` and returns the redirect that came
    /// back to ``redirectURI``, query and all. Throws to give up (a server
    /// that must answer its user with a redirect throws, and finishes with
    /// ``ProtectedResourceClient/completeAuthorization(redirect:pending:)``).
    func redirect(for pending: PendingAuthorization) async throws(OAuth2Error) -> URL
}

/// The one call of a client that starts from nothing but a URL (the MCP
/// authorization spec, the AT Protocol's OAuth profile): it sends a request,
/// and when the resource refuses it, discovers the resource's authorization
/// server (RFC 9728, RFC 8414), identifies itself (``ClientIdentity``),
/// signs the user in with PKCE and `resource` (RFC 8707) through the
/// ``AuthorizationRedirectHandler``, steps up when the resource asks, and
/// sends the request again, signed. Everything learned is kept for next time.
///
/// Tokens are kept per authorization server, resource and account: a token
/// for one resource is never sent to another.
public final class ProtectedResourceClient: Sendable {
    /// What the client does when a resource asks for more scope or a
    /// stronger authentication.
    public enum StepUp: Sendable, Hashable {
        /// Authorize again through the redirect handler, once per request.
        case automatic
        /// Throw `insufficient_scope` or `insufficient_user_authentication`
        /// carrying ``OAuth2Error/stepUp``, for the app to act on.
        case report
    }

    /// The client's choices.
    public struct Options: Sendable {
        /// What happens on a step-up challenge.
        public var stepUp: StepUp
        /// The scopes to ask for at the first sign-in; `nil` takes the
        /// resource's `scopes_supported` (as the MCP spec asks) or none.
        public var scopes: [String]?
        /// The account the token response must be for (its `sub`, the AT
        /// Protocol's DID); a token for anyone else is refused.
        public var expectedSubject: String?
        /// The rules the discovered documents are held to.
        public var rules: DiscoveryRules
        /// DPoP for the tokens, when the app wants them bound.
        public var dpop: DPoPSettings?

        /// Creates options.
        public init(
            stepUp: StepUp = .automatic,
            scopes: [String]? = nil,
            expectedSubject: String? = nil,
            rules: DiscoveryRules = DiscoveryRules(),
            dpop: DPoPSettings? = nil
        ) {
            self.stepUp = stepUp
            self.scopes = scopes
            self.expectedSubject = expectedSubject
            self.rules = rules
            self.dpop = dpop
        }
    }

    /// How the client identifies itself.
    public let identity: ClientIdentity
    /// The account the tokens are kept under.
    public let account: String
    /// The client's choices.
    public let options: Options
    /// Where tokens, registrations and discoveries are kept.
    public let store: any TokenStore & ClientRecordStore
    /// The transport every request goes through.
    public let transport: any HTTPTransport
    let redirectHandler: (any AuthorizationRedirectHandler)?
    let clock: any OAuth2Clock
    let logger: Logger

    /// Creates a client.
    public init(
        identity: ClientIdentity,
        redirectHandler: (any AuthorizationRedirectHandler)?,
        store: any TokenStore & ClientRecordStore,
        account: String = "default",
        options: Options = Options(),
        transport: any HTTPTransport,
        clock: any OAuth2Clock = SystemClock(),
        logger: Logger = Logger(label: "swift-oauth2", factory: { _ in SwiftLogNoOpLogHandler() })
    ) {
        self.identity = identity
        self.redirectHandler = redirectHandler
        self.store = store
        self.account = account
        self.options = options
        self.transport = transport
        self.clock = clock
        self.logger = logger
    }

    /// Sends `request`, signed with the token for its resource; discovers,
    /// registers, signs in and steps up as needed.
    public func send(_ request: HTTPTransportRequest) async throws(OAuth2Error) -> HTTPTransportResponse {
        throw OAuth2Error(code: .invalidConfiguration, message: "ProtectedResourceClient is not built yet")
    }

    /// Finishes an authorization the redirect handler left to the app.
    public func completeAuthorization(redirect: URL, pending: PendingAuthorization) async throws(OAuth2Error) -> AccessToken {
        throw OAuth2Error(code: .invalidConfiguration, message: "ProtectedResourceClient is not built yet")
    }
}
