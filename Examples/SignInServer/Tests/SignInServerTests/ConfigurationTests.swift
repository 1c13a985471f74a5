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
        #expect(error?.missing == [
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
}
