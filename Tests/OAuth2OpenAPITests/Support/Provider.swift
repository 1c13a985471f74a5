import Foundation
import OAuth2

/// A running local provider (Tests/Provider), read from the env.json that
/// `scripts/provider-start.sh` wrote: only what these tests use. The
/// integration tests' own reader (Tests/IntegrationTests/Support/Provider.swift)
/// is in another test target, which this one cannot import.
///
/// `make test` passes `OAUTH2_IT_PROVIDER` (hour-long tokens); without it
/// the suites that need a provider are disabled, and say so.
struct Provider: Decodable, Sendable {
    struct Endpoints: Decodable, Sendable {
        let token: String
        let revoke: String
        let testExpireAccessToken: String

        enum CodingKeys: String, CodingKey {
            case token, revoke
            case testExpireAccessToken = "test_expire_access_token"
        }
    }

    struct Client: Decodable, Sendable {
        let clientID: String
        let clientSecret: String

        enum CodingKeys: String, CodingKey {
            case clientID = "client_id"
            case clientSecret = "client_secret"
        }
    }

    struct User: Decodable, Sendable {
        let password: String
    }

    /// The bare origin, which is also the API's server URL.
    let issuer: String
    let endpoints: Endpoints
    let clients: [String: Client]
    let users: [String: User]

    static let mainIsConfigured = configured("OAUTH2_IT_PROVIDER")

    /// The main provider (`OAUTH2_IT_PROVIDER`).
    static func main() throws -> Provider { try load("OAUTH2_IT_PROVIDER") }

    private static func configured(_ variable: String) -> Bool {
        !(ProcessInfo.processInfo.environment[variable] ?? "").isEmpty
    }

    /// Reads the env.json a variable names; a path that cannot be read fails the test, it does not skip it.
    private static func load(_ variable: String) throws -> Provider {
        guard let path = ProcessInfo.processInfo.environment[variable], !path.isEmpty else {
            throw ProviderError(description: "\(variable) is not set")
        }
        do {
            return try JSONDecoder().decode(Provider.self, from: Data(contentsOf: URL(fileURLWithPath: path)))
        } catch {
            throw ProviderError(description: "\(variable)=\(path) cannot be read as a provider's env.json: \(error)")
        }
    }

    /// The API's server URL: the provider's origin.
    func serverURL() throws -> URL {
        try Self.url(issuer)
    }

    func client(_ name: String) throws -> Client {
        guard let client = clients[name] else { throw ProviderError(description: "the provider has no client \(name)") }
        return client
    }

    /// An account of the `password` client, signed in as alice through `transport`.
    func signedInClient(
        transport: any HTTPTransport, clock: any OAuth2Clock = SystemClock(), scopes: [String]? = nil,
        telemetry: OAuth2Telemetry = .global
    ) async throws -> OAuth2Client {
        let client = try client("password")
        let configuration = try OAuth2Configuration(
            clientID: client.clientID,
            clientSecret: Secret(client.clientSecret),
            tokenEndpoint: try Self.url(endpoints.token),
            revocationEndpoint: try Self.url(endpoints.revoke),
            allowsPasswordGrant: true
        )
        guard let alice = users["alice"] else { throw ProviderError(description: "the provider has no user alice") }
        let account = try OAuth2Provider(configuration: configuration, transport: transport, clock: clock, telemetry: telemetry)
            .client(account: "alice")
        try await account.authenticate(.password(username: "alice", password: Secret(alice.password), scopes: scopes))
        return account
    }

    /// Revokes `token` at the provider (RFC 7009) behind the client's back,
    /// as the `password` client: the resource server then rejects it.
    func revoke(_ token: Secret, hint: String) async throws {
        let client = try client("password")
        var request = HTTPTransportRequest(method: .post, url: try Self.url(endpoints.revoke))
        let credentials = Data("\(Self.formEncoded(client.clientID)):\(Self.formEncoded(client.clientSecret))".utf8)
        request.headers.append(HTTPField(name: .authorization, value: "Basic \(credentials.base64EncodedString())"))
        request.headers.append(HTTPField(name: .contentType, value: "application/x-www-form-urlencoded"))
        request.body = Data("token=\(Self.formEncoded(token.value))&token_type_hint=\(hint)".utf8)
        let response = try await Self.send(request)
        guard response.status == 200 else { throw ProviderError(description: "revoking answered \(response.status)") }
    }

    /// Ends `token`'s life at the provider now (its test endpoint), leaving
    /// the refresh token usable: the resource server rejects the token while
    /// the client still believes it fresh.
    func expireAccessToken(_ token: Secret) async throws {
        var request = HTTPTransportRequest(method: .post, url: try Self.url(endpoints.testExpireAccessToken))
        request.headers.append(HTTPField(name: .contentType, value: "application/x-www-form-urlencoded"))
        request.body = Data("token=\(Self.formEncoded(token.value))".utf8)
        let response = try await Self.send(request)
        guard response.status == 200 else { throw ProviderError(description: "expiring the access token answered \(response.status)") }
    }

    private static func formEncoded(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? text
    }

    private static func url(_ text: String) throws -> URL {
        guard let url = URL(string: text) else { throw ProviderError(description: "not a URL: \(text)") }
        return url
    }

    private static func send(_ request: HTTPTransportRequest) async throws -> HTTPTransportResponse {
        let transport = CurlTransport()
        do {
            let response = try await transport.send(request)
            await transport.shutdown()
            return response
        } catch {
            await transport.shutdown()
            throw error
        }
    }
}

/// The provider is not as the test expects.
struct ProviderError: Error, CustomStringConvertible {
    let description: String
}
