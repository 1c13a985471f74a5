import Foundation
import OAuth2
import OAuth2Testing
import Testing

/// A protected resource (`https://mcp.example/<name>`, one resource per
/// first path segment) and its authorization server (`https://auth.example`),
/// played by a canned transport's handler, with a browser that approves
/// every authorization. Records what the client asked for.
final class FakeResourceWorld: Sendable {
    struct Settings: Sendable {
        var codeChallengeMethods: [String]? = ["S256"]
        var metadataDocumentsSupported = false
        var registrationEndpoint = true
        var subject: String? = nil
        /// The scopes each resource wants for every request, by resource name.
        var requiredScopes: [String: [String]] = [:]
        /// The `acr` each resource wants, by resource name.
        var requiredACR: [String: String] = [:]
        /// A resource that asks for this scope on every request, whatever the token has.
        var alwaysAsksFor: String? = nil
        var scopesSupported: [String] = ["read"]
    }

    struct Grant: Sendable {
        var resource: String?
        var scopes: [String]
        var clientID: String
        var acr: String?
    }

    struct State: Sendable {
        var counter = 0
        var codes: [String: Grant] = [:]
        var accessTokens: [String: Grant] = [:]
        var refreshTokens: [String: Grant] = [:]
        var tokenRequests: [[String: String]] = []
        var authorizeQueries: [[String: String]] = []
        var registrations = 0
        var revocations = 0
        /// Client ids the server no longer knows: their token requests get `invalid_client`.
        var forgotten: Set<String> = []
    }

    static let issuer = "https://auth.example"
    static let redirectURI = URL(string: "http://127.0.0.1:8765/callback")!
    let transport = CannedTransport()
    let settings: Settings
    let state = LockedValue(State())

    init(_ settings: Settings = Settings()) {
        self.settings = settings
        transport.respond { [self] request in self.answer(request) }
    }

    static func resourceURL(_ name: String) -> URL { URL(string: "https://mcp.example/\(name)")! }

    /// Makes alice's stored token for `resource` expired, so that the next
    /// call refreshes it; returns the account it is stored under.
    @discardableResult
    static func expireAlicesToken(for resource: URL, in store: any TokenStore) async throws -> String {
        let account = ProtectedResourceClient.tokenAccount(authorizationServer: issuer, resource: resource.absoluteString, account: "alice")
        var stored = try #require(try await store.load(account: account))
        stored.expiresAt = Date(timeIntervalSinceNow: -10)
        try await store.save(stored, account: account)
        return account
    }

    var tokenRequests: [[String: String]] { state.withLock { $0.tokenRequests } }
    var authorizeQueries: [[String: String]] { state.withLock { $0.authorizeQueries } }
    var registrations: Int { state.withLock { $0.registrations } }
    var revocations: Int { state.withLock { $0.revocations } }

    /// The server forgets a registration, as a server that was reset does.
    func forget(_ clientID: String) { state.withLock { _ = $0.forgotten.insert(clientID) } }
    /// The requests to discovery documents and the registration endpoint.
    var discoveryRequests: [HTTPTransportRequest] {
        transport.requests.filter { $0.url.path.contains("/.well-known/") || $0.url.path == "/register" }
    }

    /// The browser: approves `pending` and comes back with a code for what it asked.
    func approve(_ pending: PendingAuthorization) -> URL {
        let query = Self.query(pending.url)
        let grant = Grant(
            resource: query["resource"], scopes: (query["scope"] ?? "").split(separator: " ").map(String.init),
            clientID: query["client_id"] ?? "", acr: query["acr_values"]?.split(separator: " ").first.map(String.init))
        let code = state.withLock { state in
            state.authorizeQueries.append(query)
            state.counter += 1
            let code = "code-\(state.counter)"
            state.codes[code] = grant
            return code
        }
        var components = URLComponents(url: pending.redirectURI, resolvingAgainstBaseURL: false)!
        components.queryItems = [
            URLQueryItem(name: "code", value: code), URLQueryItem(name: "state", value: pending.state),
            URLQueryItem(name: "iss", value: Self.issuer),
        ]
        return components.url!
    }

    /// What the world answers `request`, for a test that wraps the handler to hold or fail some answers.
    func answer(_ request: HTTPTransportRequest) -> HTTPTransportResponse {
        let url = request.url
        switch (url.host ?? "", url.path) {
        case ("auth.example", "/.well-known/oauth-authorization-server"):
            return json(serverMetadata)
        case ("auth.example", "/register"):
            let number = state.withLock { state in
                state.registrations += 1
                return state.registrations
            }
            return json(
                #"{"client_id":"dyn-\#(number)","redirect_uris":["\#(Self.redirectURI)"],"token_endpoint_auth_method":"none","grant_types":["authorization_code","refresh_token"]}"#,
                status: 201)
        case ("auth.example", "/token"):
            return token(Fixture.formFields(request.body))
        case ("auth.example", "/revoke"):
            state.withLock { $0.revocations += 1 }
            return HTTPTransportResponse(status: 200)
        case ("mcp.example", let path) where path.hasPrefix("/.well-known/oauth-protected-resource/"):
            let name = String(path.dropFirst("/.well-known/oauth-protected-resource/".count))
            let scopes = settings.scopesSupported.map { "\"\($0)\"" }.joined(separator: ",")
            return json(
                #"{"resource":"\#(Self.resourceURL(name))","authorization_servers":["\#(Self.issuer)"],"scopes_supported":[\#(scopes)]}"#)
        case ("mcp.example", let path):
            return resource(String(path.dropFirst().split(separator: "/").first ?? ""), request)
        default:
            return HTTPTransportResponse(status: 404)
        }
    }

    private var serverMetadata: String {
        var fields = [
            #""issuer":"\#(Self.issuer)""#, #""authorization_endpoint":"\#(Self.issuer)/authorize""#,
            #""token_endpoint":"\#(Self.issuer)/token""#, #""revocation_endpoint":"\#(Self.issuer)/revoke""#,
            #""authorization_response_iss_parameter_supported":true"#,
            #""client_id_metadata_document_supported":\#(settings.metadataDocumentsSupported)"#,
        ]
        if let methods = settings.codeChallengeMethods {
            fields.append(#""code_challenge_methods_supported":[\#(methods.map { "\"\($0)\"" }.joined(separator: ","))]"#)
        }
        if settings.registrationEndpoint { fields.append(#""registration_endpoint":"\#(Self.issuer)/register""#) }
        return "{\(fields.joined(separator: ","))}"
    }

    private func token(_ form: [String: String]) -> HTTPTransportResponse {
        if state.withLock({ $0.forgotten.contains(form["client_id"] ?? "") }) {
            state.withLock { $0.tokenRequests.append(form) }
            return json(#"{"error":"invalid_client"}"#, status: 401)
        }
        let issued: (access: String, refresh: String, grant: Grant)? = state.withLock { state in
            state.tokenRequests.append(form)
            let grant: Grant?
            switch form["grant_type"] {
            case "authorization_code": grant = form["code"].flatMap { state.codes.removeValue(forKey: $0) }
            case "refresh_token": grant = form["refresh_token"].flatMap { state.refreshTokens[$0] }
            default: grant = nil
            }
            guard var grant else { return nil }
            if let resource = form["resource"] { grant.resource = resource }
            state.counter += 1
            let access = "at-world-\(state.counter)-0000000000"
            let refresh = "rt-world-\(state.counter)-0000000000"
            state.accessTokens[access] = grant
            state.refreshTokens[refresh] = grant
            return (access, refresh, grant)
        }
        guard let issued else { return json(#"{"error":"invalid_grant"}"#, status: 400) }
        var fields = [
            #""access_token":"\#(issued.access)""#, #""token_type":"Bearer""#, #""expires_in":3600"#,
            #""refresh_token":"\#(issued.refresh)""#, #""scope":"\#(issued.grant.scopes.joined(separator: " "))""#,
        ]
        if let subject = settings.subject { fields.append(#""sub":"\#(subject)""#) }
        return json("{\(fields.joined(separator: ","))}")
    }

    private func resource(_ name: String, _ request: HTTPTransportRequest) -> HTTPTransportResponse {
        let metadata = "https://mcp.example/.well-known/oauth-protected-resource/\(name)"
        guard let authorization = request.headers[.authorization], authorization.hasPrefix("Bearer ") else {
            // `quiet` names no metadata: the client must find it at the well-known URI.
            let challenge = name == "quiet" ? #"Bearer realm="quiet""# : #"Bearer resource_metadata="\#(metadata)""#
            return HTTPTransportResponse(status: 401, headers: [.wwwAuthenticate: challenge])
        }
        let grant = state.withLock { $0.accessTokens[String(authorization.dropFirst("Bearer ".count))] }
        guard let grant, grant.resource == Self.resourceURL(name).absoluteString else {
            return HTTPTransportResponse(
                status: 401, headers: [.wwwAuthenticate: #"Bearer error="invalid_token", resource_metadata="\#(metadata)""#])
        }
        if let scope = settings.alwaysAsksFor {
            return HTTPTransportResponse(status: 403, headers: [.wwwAuthenticate: #"Bearer error="insufficient_scope", scope="\#(scope)""#])
        }
        let needed = settings.requiredScopes[name] ?? []
        if !needed.allSatisfy(grant.scopes.contains) {
            return HTTPTransportResponse(
                status: 403, headers: [.wwwAuthenticate: #"Bearer error="insufficient_scope", scope="\#(needed.joined(separator: " "))""#])
        }
        if let acr = settings.requiredACR[name], grant.acr != acr {
            return HTTPTransportResponse(
                status: 401, headers: [.wwwAuthenticate: #"Bearer error="insufficient_user_authentication", acr_values="\#(acr)""#])
        }
        return HTTPTransportResponse(status: 200, body: Data("ok \(name)".utf8))
    }

    private func json(_ text: String, status: HTTPResponse.Status = 200) -> HTTPTransportResponse {
        HTTPTransportResponse(status: status, headers: [.contentType: "application/json"], body: Data(text.utf8))
    }

    static func query(_ url: URL) -> [String: String] {
        var query: [String: String] = [:]
        for item in URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems ?? [] { query[item.name] = item.value ?? "" }
        return query
    }
}

/// The browser of a ``FakeResourceWorld``, as a redirect handler.
struct FakeBrowser: AuthorizationRedirectHandler {
    let world: FakeResourceWorld
    var redirectURI: URL { FakeResourceWorld.redirectURI }

    func redirect(for pending: PendingAuthorization) async throws(OAuth2Error) -> URL {
        world.approve(pending)
    }
}
