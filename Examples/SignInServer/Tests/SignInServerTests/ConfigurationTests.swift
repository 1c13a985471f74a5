import Foundation
import OAuth2
@testable import SignInServerCore
import Testing

/// Reading the configuration from the environment; no provider needed.
struct ConfigurationTests {
    static let complete: [String: String] = [
        "SIGNIN_CLIENT_ID": "client",
        "SIGNIN_CLIENT_SECRET": "s3cret-value",
        "SIGNIN_AUTHORIZE_URL": "https://provider.example/o/authorize/",
        "SIGNIN_TOKEN_URL": "https://provider.example/o/token/",
        "SIGNIN_REVOKE_URL": "https://provider.example/o/revoke_token/",
        "SIGNIN_REDIRECT_URI": "https://app.example/callback",
        "SIGNIN_API_URL": "https://provider.example/api/me",
        "SIGNIN_STORE_DIR": "/var/lib/signin/tokens",
    ]

    func environment(_ changes: [String: String?]) -> [String: String] {
        var environment = Self.complete
        for (name, value) in changes {
            environment[name] = value
        }
        return environment
    }

    @Test func aCompleteEnvironmentGivesTheConfigurationWithItsDefaults() throws {
        let configuration = try SignInConfiguration(environment: Self.complete)
        #expect(configuration.oauth2.clientID == "client")
        #expect(configuration.oauth2.clientSecret == Secret("s3cret-value"))
        #expect(configuration.oauth2.revocationEndpoint?.absoluteString == "https://provider.example/o/revoke_token/")
        #expect(configuration.redirectURI.absoluteString == "https://app.example/callback")
        #expect(configuration.userField == "username")
        #expect(configuration.storeKey == nil)
        #expect(configuration.host == "127.0.0.1")
        #expect(configuration.port == 8080)
        #expect(configuration.oauth2.expirySkew == .seconds(60))
    }

    @Test func everyMissingVariableIsNamedAtOnce() {
        let error = #expect(throws: ConfigurationError.self) {
            try SignInConfiguration(environment: environment(["SIGNIN_CLIENT_ID": nil, "SIGNIN_TOKEN_URL": "", "SIGNIN_STORE_DIR": nil]))
        }
        #expect(error?.missing == ["SIGNIN_CLIENT_ID", "SIGNIN_TOKEN_URL", "SIGNIN_STORE_DIR"])
        #expect(error?.description == "missing environment variables: SIGNIN_CLIENT_ID, SIGNIN_TOKEN_URL, SIGNIN_STORE_DIR")
    }

    @Test func anEmptyEnvironmentNamesEveryRequiredVariable() {
        let error = #expect(throws: ConfigurationError.self) {
            try SignInConfiguration(environment: [:])
        }
        #expect(
            error?.missing == [
                "SIGNIN_CLIENT_ID", "SIGNIN_AUTHORIZE_URL", "SIGNIN_TOKEN_URL",
                "SIGNIN_REDIRECT_URI", "SIGNIN_API_URL", "SIGNIN_STORE_DIR",
            ])
    }

    @Test func aRedirectURIWhosePathIsNotTheCallbackIsRefused() {
        let error = #expect(throws: ConfigurationError.self) {
            try SignInConfiguration(environment: environment(["SIGNIN_REDIRECT_URI": "https://app.example/oauth/done"]))
        }
        #expect(error?.invalid.map(\.variable) == ["SIGNIN_REDIRECT_URI"])
    }

    @Test func anAPIURLThatWouldSendTheTokenInTheClearIsRefused() {
        let error = #expect(throws: ConfigurationError.self) {
            try SignInConfiguration(environment: environment(["SIGNIN_API_URL": "http://provider.example/api/me"]))
        }
        #expect(error?.invalid.map(\.variable) == ["SIGNIN_API_URL"])
    }

    @Test func anInsecureTokenEndpointIsRefusedWithTheFrameworksCode() {
        let error = #expect(throws: ConfigurationError.self) {
            try SignInConfiguration(environment: environment(["SIGNIN_TOKEN_URL": "http://provider.example/o/token/"]))
        }
        #expect(error?.invalid.first?.reason.hasPrefix("insecure_endpoint:") == true)
    }

    @Test func aBadPortIsRefused() {
        let error = #expect(throws: ConfigurationError.self) {
            try SignInConfiguration(environment: environment(["SIGNIN_PORT": "70000"]))
        }
        #expect(error?.invalid.map(\.variable) == ["SIGNIN_PORT"])
    }

    @Test func aStoreKeyIsReadAndAMalformedOneIsRefusedWithoutEchoingIt() throws {
        let key = String(repeating: "ab", count: 32)
        let configuration = try SignInConfiguration(environment: environment(["SIGNIN_STORE_KEY": key]))
        #expect(configuration.storeKey != nil)

        let error = #expect(throws: ConfigurationError.self) {
            try SignInConfiguration(environment: environment(["SIGNIN_STORE_KEY": "not-a-key-zzzz"]))
        }
        #expect(error?.invalid.map(\.variable) == ["SIGNIN_STORE_KEY"])
        #expect(error?.description.contains("not-a-key-zzzz") == false)
    }

    @Test func requiringTheIssuerWithoutNamingItIsRefused() {
        let error = #expect(throws: ConfigurationError.self) {
            try SignInConfiguration(environment: environment(["SIGNIN_REQUIRE_ISSUER": "1"]))
        }
        #expect(error?.invalid.map(\.variable) == ["SIGNIN_REQUIRE_ISSUER"])
    }

    @Test func theErrorNeverRepeatsTheClientSecret() {
        let error = #expect(throws: ConfigurationError.self) {
            try SignInConfiguration(environment: environment(["SIGNIN_CLIENT_ID": nil, "SIGNIN_TOKEN_URL": "http://provider.example/t"]))
        }
        #expect(error?.description.contains("s3cret-value") == false)
    }

    @Test func theAppIsServedOverHTTPSWhenItsRedirectURIIs() throws {
        let https = try SignInConfiguration(environment: Self.complete)
        let http = try SignInConfiguration(environment: environment(["SIGNIN_REDIRECT_URI": "http://127.0.0.1:8080/callback"]))
        #expect(https.isServedOverHTTPS)
        #expect(https.publicOrigin == "https://app.example")
        #expect(!http.isServedOverHTTPS)
        #expect(http.publicOrigin == "http://127.0.0.1:8080")
    }

    // MARK: A database for several instances

    static let key = String(repeating: "ab", count: 32)

    /// The error an environment is refused with; a test issue when it is accepted.
    func refusal(_ environment: [String: String]) -> ConfigurationError? {
        #expect(throws: ConfigurationError.self) { try SignInConfiguration(environment: environment) }
    }

    func databaseEnvironment(_ changes: [String: String?] = [:]) -> [String: String] {
        var changes = changes
        for (name, value) in [
            "SIGNIN_STORE_DIR": nil, "SIGNIN_DATABASE_URL": "postgresql://app@db.example:5433/signin?sslmode=require",
            "SIGNIN_STORE_KEY": Self.key,
        ] as [String: String?]
        where changes.index(forKey: name) == nil {
            changes[name] = value
        }
        return environment(changes)
    }

    @Test func aDatabaseURLPutsTokensAndSessionsThereInsteadOfTheStoreDirectory() throws {
        let configuration = try SignInConfiguration(environment: databaseEnvironment(["PGPASSWORD": "pg-pass-word"]))
        let database = try #require(configuration.database)
        #expect(configuration.storeDirectory == nil)
        #expect(configuration.storeKey != nil)
        #expect(database.client.host == "db.example")
        #expect(database.client.port == 5433)
        #expect(database.client.username == "app")
        #expect(database.client.database == "signin")
        #expect(database.client.password == "pg-pass-word")
        #expect(database.tokenTable == "oauth2_tokens")
        #expect(database.sessionTable == "signin_sessions")
    }

    @Test func theDatabasePasswordIsReadFromAFile() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("signin-pw-\(UUID().uuidString)").path
        try Data("from-a-file\n".utf8).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let configuration = try SignInConfiguration(environment: databaseEnvironment(["SIGNIN_DATABASE_PASSWORD_FILE": path]))
        #expect(configuration.database?.client.password == "from-a-file")

        let error = refusal(databaseEnvironment(["SIGNIN_DATABASE_PASSWORD_FILE": path, "PGPASSWORD": "pg-pass-word"]))
        #expect(error?.invalid.map(\.variable) == ["SIGNIN_DATABASE_PASSWORD_FILE"])
        #expect(error?.description.contains("from-a-file") == false)
        #expect(error?.description.contains("pg-pass-word") == false)
    }

    @Test func aDatabaseNeedsTheTokenKey() {
        let error = refusal(databaseEnvironment(["SIGNIN_STORE_KEY": nil]))
        #expect(error?.invalid.map(\.variable) == ["SIGNIN_STORE_KEY"])
    }

    @Test func aDatabaseAndAStoreDirectoryTogetherAreRefused() {
        let error = refusal(databaseEnvironment(["SIGNIN_STORE_DIR": "/var/lib/signin/tokens"]))
        #expect(error?.invalid.map(\.variable) == ["SIGNIN_STORE_DIR"])
    }

    @Test func aPasswordInTheDatabaseURLIsRefusedWithoutEchoingIt() {
        let error = refusal(databaseEnvironment(["SIGNIN_DATABASE_URL": "postgresql://app:hunter2-secret@db.example/signin"]))
        #expect(error?.invalid.map(\.variable) == ["SIGNIN_DATABASE_URL"])
        #expect(error?.description.contains("hunter2-secret") == false)
        #expect(error?.missing == [], "SIGNIN_STORE_DIR is not asked for when the database URL is only unusable")
    }

    @Test func tableNamesAreCheckedAndMustDiffer() throws {
        let configuration = try SignInConfiguration(
            environment: databaseEnvironment(["SIGNIN_TOKEN_TABLE": "app_tokens", "SIGNIN_SESSION_TABLE": "app_sessions"]))
        #expect(configuration.database?.tokenTable == "app_tokens")
        #expect(configuration.database?.sessionTable == "app_sessions")

        let badName = refusal(databaseEnvironment(["SIGNIN_TOKEN_TABLE": "Tokens; DROP"]))
        #expect(badName?.invalid.map(\.variable) == ["SIGNIN_TOKEN_TABLE"])
        let sameName = refusal(databaseEnvironment(["SIGNIN_SESSION_TABLE": "oauth2_tokens"]))
        #expect(sameName?.invalid.map(\.variable) == ["SIGNIN_SESSION_TABLE"])
    }
}
