#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif
public import Logging

/// Where a client that configures itself sends its user to sign in: a CLI's
/// loopback receiver (the `OAuth2Loopback` product's `LoopbackRedirectHandler`), a server's redirect.
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
        self.transport = options.rules.guarding(transport)
        self.clock = clock
        self.logger = logger
    }

    /// What the client learned in this process, by resource: see ``ResourceSession``.
    let sessions = LockedValue<[String: ResourceSession]>([:])
    /// The resource each authorization started here is for, by its `state`,
    /// so that ``completeAuthorization(redirect:pending:)`` finds it.
    let pendingResources = LockedValue<[String: String]>([:])
    /// Discoveries in flight, by the document they start from: concurrent
    /// first calls for one resource share one (see ``SingleFlight``).
    let discoveries = SingleFlight<String, ResourceSession>()
    /// Identifications in flight, by issuer: concurrent first calls at one
    /// authorization server share one registration.
    let identifications = SingleFlight<String, Identified>()

    /// The account name a resource's tokens are kept under in ``store``: the
    /// authorization server, the resource and the account together, so that a
    /// token one sign-in got for one resource is never loaded for another, nor
    /// one server's for another's. Length-prefixed, so no two triples meet.
    public static func tokenAccount(authorizationServer: String, resource: String, account: String) -> String {
        "\(account.utf8.count):\(account) \(authorizationServer.utf8.count):\(authorizationServer) \(resource)"
    }

    /// Sends `request`, signed with the token for its resource; discovers,
    /// registers, signs in and steps up as needed.
    ///
    /// A resource the client knows (in this process, or a fresh
    /// ``DiscoveredResource`` in the store) gets the request signed at once,
    /// through the same ``SigningTransport`` as ``OAuth2Client/send(_:)``
    /// (refresh, one `invalid_token` retry, DPoP). Otherwise the request goes
    /// unsigned; a 401 starts discovery (RFC 9728 from the challenge's
    /// `resource_metadata`, or the well-known URIs; then RFC 8414), the
    /// client identifies itself (``ClientIdentity``), signs the user in
    /// through the redirect handler with PKCE S256 and `resource` (RFC 8707),
    /// and sends the request again, signed. A 403 `insufficient_scope` or a
    /// 401 `insufficient_user_authentication` authorizes again once with what
    /// the resource asked for (``Options/stepUp``).
    ///
    /// Concurrent first calls share the work: one discovery per resource and
    /// one registration per authorization server in this client, and the
    /// registration is made holding the store's lock after reading the store
    /// again, so clients and processes sharing the store register once too.
    /// A failure is shared by the calls that waited for it, not kept.
    ///
    /// - Throws: ``OAuth2Error``: discovery's (`invalid_resource_metadata`,
    ///   `resource_mismatch`, `issuer_mismatch`, …), `no_client_identity`,
    ///   `invalid_configuration` when the server does not advertise PKCE S256,
    ///   `authorization_required` (with ``OAuth2Error/stepUp``) when the user
    ///   must sign in and there is no redirect handler, `insufficient_scope` /
    ///   `insufficient_user_authentication` (with ``OAuth2Error/stepUp``) when
    ///   reported or asked again after a step-up, `subject_mismatch`, and
    ///   the errors of ``OAuth2Client/send(_:)``.
    public func send(_ request: HTTPTransportRequest) async throws(OAuth2Error) -> HTTPTransportResponse {
        var session: ResourceSession
        if let known = try await knownSession(for: request.url) {
            session = known
        } else {
            let response = try await OAuth2Error.performing(request, on: transport)
            guard response.status.code == 401 else { return response }
            let challenge = BearerChallenge.parse(response.headers[values: .wwwAuthenticate])
            logger.debug(
                "the resource asks for a token; discovering its authorization server",
                metadata: ["oauth2.url": "\(request.url.redactingQuery)"])
            session = try await discover(for: request.url, challenge: challenge)
        }
        var policy = StepUpPolicy(mode: options.stepUp, canRedirect: redirectHandler != nil)
        var registeredAgain = false
        while true {
            let action: StepUpPolicy.Action
            do throws(OAuth2Error) {
                return try await session.client.send(request)
            } catch {
                switch error.code {
                case .notAuthenticated, .reauthorizationRequired, .invalidToken:
                    action = policy.event(.noToken(initial: session.initialRequest))
                case .insufficientScope, .insufficientUserAuthentication:
                    action = policy.event(.challenged(error))
                case .invalidClient where session.registration != nil && !registeredAgain:
                    // The server forgot the registration (a refresh said so): register again, once.
                    registeredAgain = true
                    session = try await registerAgain(session)
                    continue
                default:
                    throw error
                }
            }
            switch action {
            case .fail(let error):
                throw error
            case .authorize(let asked):
                do throws(OAuth2Error) {
                    try await authorize(session, asking: asked)
                } catch let error where error.code == .invalidClient && session.registration != nil && !registeredAgain {
                    registeredAgain = true
                    session = try await registerAgain(session)
                    try await authorize(session, asking: asked)
                }
            }
        }
    }

    /// Finishes an authorization the redirect handler left to the app: the
    /// redirect that came back for `pending` (from
    /// ``authorizationURL(for:stepUp:redirectURI:)``, on this instance or
    /// another that shares the store) is validated, its code exchanged, the
    /// token checked (``Options/expectedSubject``) and kept for its resource.
    ///
    /// - Throws: ``OAuth2Error``: the redirect's and the token endpoint's
    ///   errors, `subject_mismatch`, `state_mismatch` when the client cannot
    ///   tell which resource `pending` was for.
    @discardableResult
    public func completeAuthorization(redirect: URL, pending: PendingAuthorization) async throws(OAuth2Error) -> AccessToken {
        let remembered = pendingResources.withLock { $0.removeValue(forKey: pending.state) }
        guard let resource = remembered ?? Self.resourceParameter(of: pending.url), let resourceURL = URL(string: resource),
            let session = try await knownSession(for: resourceURL)
        else {
            throw OAuth2Error(
                code: .stateMismatch,
                message: "the authorization was not started by this client for a resource it knows (no resource for its state)")
        }
        return try await finish(session, redirect: redirect, pending: pending)
    }
}
