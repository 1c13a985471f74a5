import Foundation

/// A running local provider (Tests/Provider), read from the env.json that
/// `scripts/provider-start.sh` wrote.
///
/// `make test` starts the providers and passes their env.json paths:
/// - `OAUTH2_IT_PROVIDER`: the main one (access tokens valid an hour, RFC 9207 `iss` on);
/// - `OAUTH2_IT_SHORT_PROVIDER`: one whose access tokens live 2 seconds.
/// Without them the suites that need a provider are disabled, visibly.
struct Provider: Decodable, Sendable {
    struct Endpoints: Decodable, Sendable {
        let metadata: String
        let authorize: String
        let token: String
        let revoke: String
        let deviceAuthorization: String
        let deviceVerification: String
        let apiMe: String
        let apiAdmin: String
        let testTokenRequests: String
        let testGrants: String
        let testDelayNextTokenResponse: String
        let testRedirect: String
        let testExpireAccessToken: String
        // OpenID Connect (every provider has it on; see Tests/Provider/README.md).
        let openIDConfiguration: String
        let jwks: String
        let userinfo: String
        let endSession: String
        let testRotateSigningKey: String
        let testJWKSOutage: String
        let testClientKeys: String
        let testJWTClientToken: String

        enum CodingKeys: String, CodingKey {
            case openIDConfiguration = "openid_configuration"
            case jwks, userinfo
            case endSession = "end_session"
            case testRotateSigningKey = "test_rotate_signing_key"
            case testJWKSOutage = "test_jwks_outage"
            case testClientKeys = "test_client_keys"
            case testJWTClientToken = "test_jwt_client_token"
            case metadata, authorize, token, revoke
            case deviceAuthorization = "device_authorization"
            case deviceVerification = "device_verification"
            case apiMe = "api_me"
            case apiAdmin = "api_admin"
            case testTokenRequests = "test_token_requests"
            case testGrants = "test_grants"
            case testDelayNextTokenResponse = "test_delay_next_token_response"
            case testRedirect = "test_redirect"
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
        let username: String
        let password: String
        let email: String?
        let name: String?
    }

    let name: String
    let issuer: String
    let runDir: String
    let browser: String
    let endpoints: Endpoints
    let clients: [String: Client]
    let users: [String: User]

    enum CodingKeys: String, CodingKey {
        case name, issuer, browser, endpoints, clients, users
        case runDir = "run_dir"
    }

    /// Whether `make test` (or the caller) named a main provider: the suites' `.enabled(if:)`.
    static let mainIsConfigured = configured("OAUTH2_IT_PROVIDER")
    /// Whether a provider with 2-second access tokens was named.
    static let shortIsConfigured = configured("OAUTH2_IT_SHORT_PROVIDER")

    /// Whether the two providers with 2-second tokens and refresh-token reuse
    /// protection were named, one without a grace period and one with.
    static let rotatingAreConfigured = configured("OAUTH2_IT_ROTATE_PROVIDER") && configured("OAUTH2_IT_GRACE_PROVIDER")

    /// 2-second access tokens, rotation, reuse protection, no grace period
    /// (`OAUTH2_IT_ROTATE_PROVIDER`): a spent refresh token presented again revokes the grant.
    static func rotate() throws -> Provider { try load("OAUTH2_IT_ROTATE_PROVIDER") }
    /// The same with a 30-second grace period for the refresh token just
    /// replaced (`OAUTH2_IT_GRACE_PROVIDER`).
    static func grace() throws -> Provider { try load("OAUTH2_IT_GRACE_PROVIDER") }

    /// Whether a provider of the OpenID tests' own was named (`OAUTH2_IT_OIDC_PROVIDER`):
    /// its signing key is rotated and its sessions logged out, which would disturb others.
    static let oidcIsConfigured = configured("OAUTH2_IT_OIDC_PROVIDER")
    /// The OpenID tests' own provider (`OAUTH2_IT_OIDC_PROVIDER`).
    static func oidc() throws -> Provider { try load("OAUTH2_IT_OIDC_PROVIDER") }

    /// The main provider (`OAUTH2_IT_PROVIDER`).
    static func main() throws -> Provider { try load("OAUTH2_IT_PROVIDER") }
    /// The provider with 2-second access tokens (`OAUTH2_IT_SHORT_PROVIDER`).
    static func short() throws -> Provider { try load("OAUTH2_IT_SHORT_PROVIDER") }

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

    /// A client of this run by its name in the README's table (`confidential`, `public`, …).
    func client(_ name: String) throws -> Client {
        guard let client = clients[name] else { throw ProviderError(description: "the provider has no client \(name)") }
        return client
    }

    /// The password of a user of this run.
    func password(of username: String) throws -> String {
        guard let user = users[username] else { throw ProviderError(description: "the provider has no user \(username)") }
        return user.password
    }

    /// Plays the browser: signs `username` in at `url`, answers the consent form and returns the redirect.
    func browse(_ url: String, username: String = "alice", deny: Bool = false, follow: Bool = false) async throws -> String {
        let password = try password(of: username)
        var arguments = [url, "--username", username, "--password=\(password)"]
        if deny { arguments.append("--deny") }
        if follow { arguments.append("--follow") }
        let result = try await Subprocess.run(browser, arguments, environment: ProcessInfo.processInfo.environment)
        guard result.status == 0 else {
            throw ProviderError(description: "provider-browser.sh failed (\(result.status)): \(result.stderr)")
        }
        return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Plays the browser at an end-session URL (RP-initiated logout): signs
    /// `username` in first when given (DOT then asks to confirm), and returns
    /// where the provider sent the browser.
    func browseLogout(_ url: String, username: String? = nil) async throws -> String {
        var arguments = ["--logout", url]
        if let username {
            let password = try password(of: username)
            arguments += ["--username", username, "--password=\(password)"]
        }
        let result = try await Subprocess.run(browser, arguments, environment: ProcessInfo.processInfo.environment)
        guard result.status == 0 else {
            throw ProviderError(description: "provider-browser.sh --logout failed (\(result.status)): \(result.stderr)")
        }
        return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Approves (or denies) a device at its verification URL.
    func approveDevice(_ url: String, username: String = "alice") async throws {
        let password = try password(of: username)
        let arguments = ["--device", url, "--username", username, "--password=\(password)"]
        let result = try await Subprocess.run(browser, arguments, environment: ProcessInfo.processInfo.environment)
        guard result.status == 0, result.stdout.contains("authorized") else {
            throw ProviderError(description: "provider-browser.sh --device failed (\(result.status)): \(result.stdout) \(result.stderr)")
        }
    }
}

/// The provider is not as the test expects.
struct ProviderError: Error, CustomStringConvertible {
    let description: String
}
