import Foundation
import HTTPTypes
import Logging
import MCP
import OAuth2
import Synchronization

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The MCP Swift SDK's authorization seam, `HTTPClientAuthorizer`, answered
/// by swift-oauth2's ``ProtectedResourceClient`` instead of the SDK's own
/// `OAuthAuthorizer`: discovery (RFC 9728, RFC 8414), the client's identity
/// (a client ID metadata document, dynamic registration, or a client id),
/// the sign-in with PKCE and `resource` (RFC 8707), the tokens kept per
/// resource in the store, refresh and step-up all happen in the library.
///
/// The SDK's transport sends each request itself and asks the authorizer two
/// things, "the `Authorization` value for this endpoint" (synchronously,
/// before a request) and "handle this refusal" (its status and headers). The
/// library answers each with one call: ``ProtectedResourceClient/token(for:)``
/// (the token held for the endpoint's resource, refreshed) before each
/// request, and ``ProtectedResourceClient/authorize(after:for:)`` (discovery
/// and a sign-in, or a step-up, as `send` would) on a refusal.
///
/// What this cannot do: DPoP (RFC 9449). A DPoP proof is made for one
/// request (method, URL, a fresh `jti`), and the SDK's seam carries one
/// `Authorization` value per endpoint; a client with `Options.dpop` is
/// refused.
public final class ProtectedResourceAuthorizer: HTTPClientAuthorizer, Sendable {
    /// The library's client.
    public let client: ProtectedResourceClient
    let logger: Logger

    /// Per endpoint: the `Authorization` value to send, and the refusals
    /// handled since the SDK last started a request (its
    /// `prepareAuthorization` call), so that a resource asking for more on
    /// every retry gets one step-up and then an error, not a browser trip a time.
    struct EndpointState {
        var authorization: String?
        var signIns = 0
        var stepUps = 0
    }
    let state = Mutex<[String: EndpointState]>([:])

    /// At most three tries of one request: a sign-in, then one step-up.
    public var maxAuthorizationAttempts: Int { 3 }

    /// Creates an authorizer whose ``ProtectedResourceClient`` fetches
    /// metadata, registers and asks for tokens through `transport`.
    ///
    /// - Throws: `invalid_configuration` when `options` asks for DPoP, which
    ///   the SDK's seam cannot carry.
    public init(
        identity: ClientIdentity,
        redirectHandler: (any AuthorizationRedirectHandler)?,
        store: any TokenStore & ClientRecordStore,
        account: String = "default",
        options: ProtectedResourceClient.Options = .init(),
        transport: any HTTPTransport,
        logger: Logger = Logger(label: "mcp-client", factory: { _ in SwiftLogNoOpLogHandler() })
    ) throws(OAuth2Error) {
        guard options.dpop == nil else {
            throw OAuth2Error(
                code: .invalidConfiguration,
                message: "the MCP SDK's HTTPClientAuthorizer carries one Authorization value per endpoint; DPoP needs a proof per request")
        }
        self.logger = logger
        self.client = ProtectedResourceClient(
            identity: identity, redirectHandler: redirectHandler, store: store, account: account, options: options,
            transport: transport, logger: logger)
    }

    /// The MCP spec: an authorization server's endpoints are https; the MCP
    /// endpoint is https too, but for loopback, where tests and local servers live.
    public func validateEndpointSecurity(for endpoint: URL) throws {
        let scheme = endpoint.scheme?.lowercased()
        if scheme == "https" { return }
        if scheme == "http", let host = endpoint.host, Self.isLoopback(host) { return }
        throw OAuth2Error(
            code: .invalidConfiguration, message: "an MCP endpoint that gets a token must be https (or http on a loopback address)")
    }

    /// The value kept for this endpoint by the last ``prepareAuthorization(for:session:)``
    /// or ``handleChallenge(statusCode:headers:endpoint:operationKey:session:)``.
    public func authorizationHeader(for endpoint: URL) -> String? {
        state.withLock { $0[endpoint.absoluteString]?.authorization }
    }

    /// Called by the SDK before each request: the token the client holds for
    /// the endpoint's resource, refreshed when it has expired, so that the
    /// request goes out signed, without a 401 first. Holding none, nothing is kept.
    public func prepareAuthorization(for endpoint: URL, session: URLSession) async throws {
        let key = endpoint.absoluteString
        state.withLock {
            $0[key, default: EndpointState()].signIns = 0
            $0[key, default: EndpointState()].stepUps = 0
        }
        let token: AccessToken?
        do {
            token = try await client.token(for: endpoint)
        } catch {
            failed(error)
            throw error
        }
        state.withLock { $0[key, default: EndpointState()].authorization = token.map(Self.authorization) }
    }

    /// The resource refused a request: the client acts on the refusal (the
    /// first time: discovery, identity, sign-in; a 403 `insufficient_scope`
    /// or `insufficient_user_authentication`: a step-up) and the SDK sends
    /// the request again with the new token.
    ///
    /// - Throws: the library's ``OAuth2Error``; a second step-up for one
    ///   request throws the resource's `insufficient_scope` (or
    ///   `insufficient_user_authentication`) with ``OAuth2Error/stepUp``
    ///   without sending the user anywhere.
    public func handleChallenge(
        statusCode: Int, headers: [String: String], endpoint: URL, operationKey: String?, session: URLSession
    ) async throws -> Bool {
        challengesHandled.withLock { $0 += 1 }
        var fields = HTTPFields()
        for (name, value) in headers {
            guard let name = HTTPField.Name(name) else { continue }
            fields.append(HTTPField(name: name, value: value))
        }
        let refusal = HTTPTransportResponse(status: HTTPResponse.Status(code: statusCode), headers: fields, url: endpoint)
        let parsed = BearerChallenge.parse(fields[values: .wwwAuthenticate])
        let isStepUp = statusCode == 403 || parsed?.error == "insufficient_scope" || parsed?.error == "insufficient_user_authentication"
        let key = endpoint.absoluteString
        let refused: OAuth2Error? = state.withLock { states in
            var current = states[key, default: EndpointState()]
            defer { states[key] = current }
            if isStepUp {
                current.stepUps += 1
                guard current.stepUps <= 1 else { return Self.stepUpRefused(parsed) }
            } else {
                current.signIns += 1
                guard current.signIns <= 1 else {
                    return OAuth2Error(code: .invalidToken, message: "the resource refused the token it had just been given")
                }
            }
            return nil
        }
        if let refused {
            failed(refused)
            throw refused
        }
        logger.debug(
            "the MCP endpoint refused a request; the client acts on its challenge",
            metadata: ["status": "\(statusCode)", "operation": "\(operationKey ?? "-")"])
        let token: AccessToken
        do {
            token = try await client.authorize(after: refusal, for: endpoint)
        } catch {
            failed(error)
            throw error
        }
        state.withLock { $0[key, default: EndpointState()].authorization = Self.authorization(token) }
        return true
    }

    /// The library's error behind the last authorization that failed. The
    /// SDK reports a failed challenge as `MCPError.internalError` with the
    /// error's `localizedDescription`, which on Linux says nothing of it; an
    /// app reads the code (and ``OAuth2Error/stepUp``) here.
    public var lastError: OAuth2Error? {
        lastFailure.withLock { $0 }
    }
    let lastFailure = Mutex<OAuth2Error?>(nil)
    /// How many refusals the SDK has passed on (for the tests: a run that
    /// holds a token sends no request unsigned first).
    let challengesHandled = Mutex(0)

    func failed(_ error: OAuth2Error) {
        lastFailure.withLock { $0 = error }
    }

    /// The `Authorization` value of a bearer token (DPoP was refused at `init`).
    static func authorization(_ token: AccessToken) -> String {
        "Bearer \(token.accessToken.value)"
    }

    static func stepUpRefused(_ challenge: BearerChallenge?) -> OAuth2Error {
        // The type is the library's; what the resource asked for goes along, as the library's own errors carry it.
        let code: OAuth2Error.Code =
            challenge?.error == "insufficient_user_authentication" ? .insufficientUserAuthentication : .insufficientScope
        var error = OAuth2Error(code: code, message: "the resource asked for more again after a step-up; not asking the user again")
        error.stepUp = StepUpRequest(
            scopes: challenge?.scope?.split(separator: " ").map(String.init) ?? [],
            acrValues: challenge?.acrValues?.split(separator: " ").map(String.init) ?? [],
            maxAge: challenge?.maxAge)
        return error
    }

    static func isLoopback(_ host: String) -> Bool {
        let bare = host.trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
        return bare == "localhost" || bare == "::1" || bare.hasPrefix("127.")
    }
}
