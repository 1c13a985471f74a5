import Foundation
import Testing

/// A running local provider, as its `env.json` describes it (Tests/Provider/README.md).
///
/// Found through `OAUTH2_IT_PROVIDER` (access tokens valid an hour) and
/// `OAUTH2_IT_SHORT_PROVIDER` (valid 2 seconds), each the path of an
/// `env.json`; `make test-server-example` starts both and sets them.
struct ProviderEnvironment: Decodable, Sendable {
    struct Endpoints: Decodable, Sendable {
        let authorize: URL
        let token: URL
        let revoke: URL
        let apiMe: URL
        let testTokenRequests: URL

        enum CodingKeys: String, CodingKey {
            case authorize, token, revoke
            case apiMe = "api_me"
            case testTokenRequests = "test_token_requests"
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
        let username: String
        let password: String
        /// What the ID token says with the `email` and `profile` scopes.
        let email: String?
        let name: String?
    }

    let issuer: String
    let accessTokenLifetime: Int
    let browser: String
    let endpoints: Endpoints
    let clients: [String: Client]
    let users: [String: User]

    enum CodingKeys: String, CodingKey {
        case issuer, browser, endpoints, clients, users
        case accessTokenLifetime = "access_token_lifetime"
    }

    /// The provider whose tokens live an hour, or `nil` when none is configured.
    static let main = load("OAUTH2_IT_PROVIDER")
    /// The provider whose tokens live 2 seconds, or `nil` when none is configured.
    static let short = load("OAUTH2_IT_SHORT_PROVIDER")

    /// Why the integration suites are disabled, shown by `swift test`.
    static let disabledReason: Comment =
        "set OAUTH2_IT_PROVIDER and OAUTH2_IT_SHORT_PROVIDER to env.json paths, or run `make test-server-example`"

    private static func load(_ variable: String) -> ProviderEnvironment? {
        guard let path = ProcessInfo.processInfo.environment[variable], !path.isEmpty,
            let data = FileManager.default.contents(atPath: path)
        else {
            return nil
        }
        return try? JSONDecoder().decode(ProviderEnvironment.self, from: data)
    }

    /// The confidential authorization-code client.
    var client: Client {
        get throws { try requireValue(clients["confidential"], "the provider has no confidential client") }
    }

    /// A user of the provider: `alice` or `bob`.
    func user(_ name: String) throws -> User {
        try requireValue(users[name], "the provider has no user \(name)")
    }
}

/// Unwraps a value the provider's env.json should have had.
func requireValue<T>(_ value: T?, _ message: String) throws -> T {
    guard let value else { throw TestFailure(message) }
    return value
}

/// A failed step of a test's setup.
struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
