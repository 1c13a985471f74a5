#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif
import HTTPTypes

/// Registers a client at an authorization server's registration endpoint
/// (RFC 7591) and manages the registration where the server offers it
/// (RFC 7592: read, update, delete with the registration access token).
///
/// Every request is JSON, never follows a redirect (a registration answered
/// from elsewhere is not the server's, and a redirected POST would carry the
/// initial access token along), is bounded by ``DiscoveryRules/maxDocumentSize``
/// and ``DiscoveryRules/timeout``, and goes only to `https` (or loopback
/// `http`). No error names a client secret or an access token.
///
/// **A forgotten registration.** When the server answers a read, an update
/// or a delete with HTTP 401 or 404 (RFC 7592 §2.1: "If the client does not
/// exist on this server, the server MUST respond with HTTP 401"), the
/// registrar throws `invalid_client` with that ``OAuth2Error/httpStatus``,
/// whatever error object came with it: the registration is gone (or its
/// access token was revoked, which leaves the client as unmanageable), so
/// the caller deletes its record and registers again.
public struct ClientRegistrar: Sendable {
    /// The authorization server registered with.
    public let metadata: AuthorizationServerMetadata
    /// The transport the requests go through.
    public let transport: any HTTPTransport
    /// The rules the answers are held to (size, timeout).
    public let rules: DiscoveryRules

    /// Creates a registrar for the server `metadata` describes.
    public init(metadata: AuthorizationServerMetadata, transport: any HTTPTransport, rules: DiscoveryRules = DiscoveryRules()) {
        self.metadata = metadata
        self.transport = rules.guarding(transport)
        self.rules = rules
    }

    /// Registers a client with `client` metadata (RFC 7591 §3.1).
    ///
    /// Sends `client` as JSON (RFC 7591 names, absent fields left out) with
    /// `Authorization: Bearer` and `initialAccessToken` when one is given.
    /// The registration's ``ClientRegistration/metadata`` is what the server
    /// echoed, field by field, and what was sent for the fields it left out.
    ///
    /// - Throws: `invalid_configuration` when the server has no
    ///   registration endpoint; `insecure_endpoint` for an `http` one on a
    ///   host that is not loopback; the server's error (`invalid_redirect_uri`,
    ///   `invalid_client_metadata`, …, RFC 7591 §3.2.2) with its HTTP status;
    ///   `unexpected_redirect`, `response_too_large`, `http_error`;
    ///   `invalid_registration_response` for a success without a usable
    ///   `client_id`, a field of the wrong type, or a `registration_client_uri`
    ///   that is not on the registration endpoint's origin; the transport's errors.
    public func register(_ client: ClientMetadata, initialAccessToken: Secret? = nil) async throws(OAuth2Error) -> ClientRegistration {
        guard let endpoint = metadata.registrationEndpoint else {
            throw OAuth2Error(
                code: .invalidConfiguration,
                message: "the authorization server \(Self.describe(metadata.issuer)) has no registration endpoint (RFC 7591)")
        }
        try Self.requireSecure(endpoint, role: "registration endpoint")
        let body = try RegistrationMessage.body(for: client, clientID: nil, clientSecret: nil)
        let request = try self.request(.post, endpoint, bearer: initialAccessToken, body: body)
        let response = try await OAuth2Error.performing(request, on: transport)
        let answer = RegistrationMessage.Answer(
            response: response, issuer: metadata.issuer, managementOrigin: endpoint, sent: client, previous: nil,
            maxBodySize: rules.maxDocumentSize)
        return try answer.registration(successes: [201, 200])
    }

    /// Reads the registration back (RFC 7592 §2.1).
    ///
    /// Values the server leaves out of its answer (a secret, the access
    /// token) are kept from `registration`; a rotated one replaces it.
    ///
    /// - Throws: `invalid_client` (HTTP 401 or 404) when the server forgot
    ///   the client (see the type's documentation); `invalid_configuration`
    ///   when `registration` has no `registration_client_uri` or access
    ///   token, or was made at another server; `invalid_registration_response`
    ///   for an answer about another client; the errors of ``register(_:initialAccessToken:)``.
    public func read(_ registration: ClientRegistration) async throws(OAuth2Error) -> ClientRegistration {
        let (uri, token) = try management(registration)
        let response = try await OAuth2Error.performing(try request(.get, uri, bearer: token, body: nil), on: transport)
        try Self.requireKnown(response, registration)
        let answer = RegistrationMessage.Answer(
            response: response, issuer: metadata.issuer, managementOrigin: uri, sent: registration.metadata, previous: registration,
            maxBodySize: rules.maxDocumentSize)
        return try answer.registration(successes: [200])
    }

    /// Replaces the registration's metadata (RFC 7592 §2.2).
    ///
    /// Sends `client` with the registration's `client_id` (and its secret,
    /// which RFC 7592 §2.2 has the client send back). A registration access
    /// token the server rotates (django-oauth-toolkit does on every update)
    /// replaces the old one in what is returned: keep it, the old one no
    /// longer works.
    ///
    /// - Throws: as ``read(_:)``.
    public func update(_ registration: ClientRegistration, to client: ClientMetadata) async throws(OAuth2Error) -> ClientRegistration {
        let (uri, token) = try management(registration)
        let body = try RegistrationMessage.body(for: client, clientID: registration.clientID, clientSecret: registration.clientSecret)
        let response = try await OAuth2Error.performing(try request(.put, uri, bearer: token, body: body), on: transport)
        try Self.requireKnown(response, registration)
        let answer = RegistrationMessage.Answer(
            response: response, issuer: metadata.issuer, managementOrigin: uri, sent: client, previous: registration,
            maxBodySize: rules.maxDocumentSize)
        return try answer.registration(successes: [200])
    }

    /// Deletes the registration (RFC 7592 §2.3): HTTP 204 (or another 2xx).
    ///
    /// - Throws: `invalid_client` (HTTP 401 or 404) when the server had
    ///   forgotten the client already; the other errors of ``read(_:)``.
    public func delete(_ registration: ClientRegistration) async throws(OAuth2Error) {
        let (uri, token) = try management(registration)
        let response = try await OAuth2Error.performing(try request(.delete, uri, bearer: token, body: nil), on: transport)
        try Self.requireKnown(response, registration)
        try ProviderResponse.requireSuccess(
            response, endpoint: "client configuration endpoint", maxBodySize: rules.maxDocumentSize, now: Date())
    }

    /// The management URI and access token of `registration`, checked.
    private func management(_ registration: ClientRegistration) throws(OAuth2Error) -> (URL, Secret) {
        guard registration.issuer == metadata.issuer else {
            throw OAuth2Error(
                code: .invalidConfiguration,
                message:
                    "the registration was made at \(Self.describe(registration.issuer)), not at \(Self.describe(metadata.issuer)); refusing to send its access token there"
            )
        }
        guard let uri = registration.registrationClientURI, let token = registration.registrationAccessToken else {
            throw OAuth2Error(
                code: .invalidConfiguration,
                message:
                    "the registration has no registration_client_uri or registration access token: the server does not offer RFC 7592 management"
            )
        }
        try Self.requireSecure(uri, role: "client configuration endpoint")
        return (uri, token)
    }

    /// A JSON request to `url`, bounded by the rules, never following a redirect.
    private func request(_ method: HTTPRequest.Method, _ url: URL, bearer: Secret?, body: Data?) throws(OAuth2Error) -> HTTPTransportRequest
    {
        var headers: HTTPFields = [.accept: "application/json"]
        if body != nil {
            headers[.contentType] = "application/json"
        }
        if let bearer {
            guard ProviderResponse.isVisibleASCII(bearer.value), !bearer.value.contains(" ") else {
                throw OAuth2Error(
                    code: .invalidConfiguration,
                    message: "the access token for the registration endpoint is empty or has characters a header cannot carry")
            }
            headers[.authorization] = "Bearer \(bearer.value)"
        }
        return HTTPTransportRequest(
            method: method, url: url, headers: headers, body: body, timeout: rules.timeout, redirects: .never,
            maxResponseSize: rules.maxDocumentSize)
    }

    /// Throws `invalid_client` for the 401 or 404 of a server that forgot the client.
    private static func requireKnown(_ response: HTTPTransportResponse, _ registration: ClientRegistration) throws(OAuth2Error) {
        let status = response.status.code
        guard status != 401 && status != 404 else {
            throw OAuth2Error(
                code: .invalidClient,
                message:
                    "the authorization server no longer knows the client \(describe(registration.clientID)) (HTTP \(status)): delete the registration and register again",
                httpStatus: status
            )
        }
    }

    private static func requireSecure(_ url: URL, role: String) throws(OAuth2Error) {
        guard EndpointPolicy.isSecure(url) else {
            throw OAuth2Error(
                code: .insecureEndpoint, message: "the \(role) \(url.redactingQuery) is not https (http is allowed for loopback hosts only)"
            )
        }
    }

    /// Quoted and bounded: issuers and client ids are not secret, but they come from outside.
    static func describe(_ text: String) -> String {
        "\"\(OAuth2Error.sanitize(String(text.prefix(200))))\""
    }
}
