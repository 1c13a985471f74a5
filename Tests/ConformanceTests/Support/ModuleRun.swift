import Foundation
import OAuth2
import OAuth2Testing
import Testing

/// One run of one conformance module: its issuer at the conformance provider,
/// and the relying party's steps against it, each through the library's own
/// code (discovery, the authorization URL, the code exchange, the key set,
/// userinfo, refresh, logout) over a real ``CurlTransport``.
///
/// The client is the one op.py knows (static registration, as the suite's
/// `static_client` variant): `client_secret_basic` unless the test says otherwise.
struct ModuleRun: Sendable {
    static let clientID = "oidf-rp"
    static let clientSecret = Secret("oidf-rp-secret-0123456789abcdef0123456789")
    static let redirectURI = URL(string: "https://rp.example/callback")!
    static let postLogoutRedirectURI = URL(string: "https://rp.example/logged-out")!

    /// One transport for the whole run, as an app shares one.
    static let transport = CurlTransport()

    let module: String
    let issuer: String
    let tls: TLSFiles

    /// OpenID Connect Discovery, as an app does it.
    func discover() async throws(OAuth2Error) -> OAuth2Configuration {
        try await OAuth2Configuration.discover(
            issuer: issuer, clientID: Self.clientID, clientSecret: Self.clientSecret, transport: Self.transport)
    }

    /// The provider of a discovered configuration, with a clock a test may move.
    func provider(
        _ configuration: OAuth2Configuration? = nil, clock: any OAuth2Clock = SystemClock()
    ) async throws -> OAuth2Provider {
        var discovered = configuration
        if discovered == nil { discovered = try await discover() }
        return try OAuth2Provider(configuration: try #require(discovered), transport: Self.transport, clock: clock)
    }

    /// The code flow: the library's authorization URL, the browser's visit
    /// (a GET whose redirect back to the client is read, not followed), and
    /// the library's code exchange with its ID token verification.
    func signIn(_ provider: OAuth2Provider, scopes: [String] = ["openid"]) async throws -> AccessToken {
        let pending = try await provider.authorizationURL(redirectURI: Self.redirectURI, scopes: scopes)
        let response = try await provider.transport.send(HTTPTransportRequest(url: pending.url, redirects: .never))
        guard response.status.kind == .redirection, let location = response.headers[.location] else {
            throw ConformanceProviderError.noRedirect(status: response.status.code)
        }
        return try await provider.token(for: .authorizationCode(redirect: location, pending: pending))
    }

    /// Signs in and adopts the token as the account's, as an app does before
    /// it calls userinfo or refreshes.
    func signedInClient(_ provider: OAuth2Provider, scopes: [String] = ["openid"]) async throws -> OAuth2Client {
        let token = try await signIn(provider, scopes: scopes)
        let client = provider.client(account: "user")
        _ = try await client.adopt(token)
        return client
    }

    /// What the relying party asked of the provider, in order: op.py's record.
    func log() async throws -> [ProviderEvent] {
        let url = try #require(URL(string: issuer + "/_log"))
        let response = try await Self.transport.send(HTTPTransportRequest(url: url, redirects: .never))
        let events = try #require(try JSONSerialization.jsonObject(with: response.body) as? [[String: Any]])
        return events.map(ProviderEvent.init)
    }

    /// Registers the static client's `backchannel_logout_uri` with op.py, as
    /// the suite's tester enters it in the client's configuration.
    func registerBackChannelLogoutURI(_ uri: String) async throws {
        let url = try #require(URL(string: issuer + "/_client"))
        let body = "backchannel_logout_uri=" + (uri.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")
        let request = HTTPTransportRequest(
            method: .post, url: url, headers: [.contentType: "application/x-www-form-urlencoded"], body: Data(body.utf8),
            redirects: .never)
        let response = try await Self.transport.send(request)
        #expect(response.status == .ok)
    }

    /// The names of the endpoints the relying party called, in order.
    func calls() async throws -> [String] {
        try await log().map(\.event)
    }
}

/// One request op.py recorded: the endpoint (`discovery`, `jwks`,
/// `authorization`, `token`, `userinfo`, `end_session`, `claims_endpoint`)
/// and what it noted about it.
struct ProviderEvent: @unchecked Sendable {
    // @unchecked: `details` holds JSONSerialization's immutable values only.
    let event: String
    let details: [String: Any]

    init(_ object: [String: Any]) {
        event = object["event"] as? String ?? ""
        details = object
    }

    subscript(_ name: String) -> Any? { details[name] }
}
