import Foundation
import OAuth2

/// The Microsoft-Entra-and-Google-behaving test provider
/// (Tests/EntraProvider/serve.py), read from the env.json that
/// `scripts/entra-provider.sh start` wrote; `make test` passes its path in
/// `OAUTH2_IT_ENTRA`. Its users and behaviour are described in serve.py.
struct EntraProvider: Decodable, Sendable {
    let base: String
    let clientID: String
    let clientSecret: String
    let tenants: [String: String]
    let googleIssuer: String
    let googleIssuerBare: String
    let testNextRefreshUser: String

    enum CodingKeys: String, CodingKey {
        case base
        case clientID = "client_id"
        case clientSecret = "client_secret"
        case tenants
        case googleIssuer = "google_issuer"
        case googleIssuerBare = "google_issuer_bare"
        case testNextRefreshUser = "test_next_refresh_user"
    }

    static let variable = "OAUTH2_IT_ENTRA"
    static var isConfigured: Bool { !(ProcessInfo.processInfo.environment[variable] ?? "").isEmpty }

    static func load() throws -> EntraProvider {
        let path = ProcessInfo.processInfo.environment[variable] ?? ""
        return try JSONDecoder().decode(EntraProvider.self, from: Data(contentsOf: URL(fileURLWithPath: path)))
    }

    static let redirectURI = URL(string: "http://127.0.0.1/callback")!

    /// The tenant GUID of `name` (contoso, fabrikam, consumers).
    func tenant(_ name: String) -> String { tenants[name] ?? "" }

    /// The issuer of a tenant, as its ID tokens name it.
    func tenantIssuer(_ name: String) -> String { "\(base)/\(tenant(name))/v2.0" }

    /// The authorization request as the user's browser makes it: the provider
    /// signs `login` in (no page: `login_hint` picks the user) and redirects;
    /// returns the redirect's Location.
    func browse(_ url: URL, transport: any HTTPTransport) async throws -> String {
        let response = try await transport.send(HTTPTransportRequest(method: .get, url: url, redirects: .never))
        guard response.status.code == 302, let location = response.headers[.location] else {
            throw OAuth2Error(code: .httpError, message: "the authorize endpoint answered \(response.status.code), not a redirect")
        }
        return location
    }

    /// Tells the provider to answer the next refresh with an ID token for `login`.
    func answerNextRefresh(as login: String, transport: any HTTPTransport) async throws {
        var request = HTTPTransportRequest(method: .post, url: URL(string: testNextRefreshUser)!, redirects: .never)
        request.headers[.contentType] = "application/x-www-form-urlencoded"
        request.body = Data("login=\(login.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")".utf8)
        _ = try await transport.send(request)
    }
}
