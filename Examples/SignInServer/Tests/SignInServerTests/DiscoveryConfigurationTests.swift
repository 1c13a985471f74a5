import Foundation
import Synchronization
import OAuth2
@testable import SignInServerCore
import Testing

/// Reading an OpenID Connect configuration: `SIGNIN_DISCOVER=1` against a
/// stub provider that serves its metadata; no provider needed.
struct DiscoveryConfigurationTests {
    static let issuer = "https://provider.example"

    static let environment: [String: String] = [
        "SIGNIN_CLIENT_ID": "client",
        "SIGNIN_CLIENT_SECRET": "s3cret-value",
        "SIGNIN_ISSUER": issuer,
        "SIGNIN_DISCOVER": "1",
        "SIGNIN_SCOPES": "openid profile email",
        "SIGNIN_REDIRECT_URI": "https://app.example/callback",
        "SIGNIN_STORE_DIR": "/var/lib/signin/tokens",
    ]

    /// Serves the OpenID configuration of ``issuer`` (with or without a
    /// `jwks_uri`) and counts the requests it gets.
    final class StubProvider: HTTPTransport, Sendable {
        let openID: Bool
        let requests = Mutex(0)

        init(openID: Bool = true) {
            self.openID = openID
        }

        func send(_ request: HTTPTransportRequest) async throws -> HTTPTransportResponse {
            requests.withLock { $0 += 1 }
            guard request.url.absoluteString == "\(DiscoveryConfigurationTests.issuer)/.well-known/openid-configuration" else {
                return HTTPTransportResponse(status: 404, url: request.url)
            }
            var metadata: [String: Any] = [
                "issuer": DiscoveryConfigurationTests.issuer,
                "authorization_endpoint": "\(DiscoveryConfigurationTests.issuer)/authorize",
                "token_endpoint": "\(DiscoveryConfigurationTests.issuer)/token",
                "response_types_supported": ["code"],
            ]
            if openID {
                metadata["jwks_uri"] = "\(DiscoveryConfigurationTests.issuer)/jwks"
                metadata["userinfo_endpoint"] = "\(DiscoveryConfigurationTests.issuer)/userinfo"
                metadata["id_token_signing_alg_values_supported"] = ["RS256"]
            }
            return HTTPTransportResponse(
                status: 200,
                headers: [.contentType: "application/json"],
                body: try JSONSerialization.data(withJSONObject: metadata),
                url: request.url
            )
        }
    }

    func environment(_ changes: [String: String?]) -> [String: String] {
        var environment = Self.environment
        for (name, value) in changes {
            environment[name] = value
        }
        return environment
    }

    @Test func discoveryFillsTheEndpointsAndTheOpenIDSettings() async throws {
        let configuration = try await SignInConfiguration.load(environment: Self.environment, transport: StubProvider())
        #expect(configuration.oauth2.authorizationEndpoint?.absoluteString == "\(Self.issuer)/authorize")
        #expect(configuration.oauth2.tokenEndpoint.absoluteString == "\(Self.issuer)/token")
        #expect(configuration.oauth2.issuer == Self.issuer)
        #expect(configuration.oauth2.openID?.jwksURI.absoluteString == "\(Self.issuer)/jwks")
        #expect(configuration.oauth2.defaultScopes == ["openid", "profile", "email"])
        #expect(configuration.oauth2.clientSecret == Secret("s3cret-value"))
        #expect(configuration.apiURL == nil)
        #expect(configuration.identifiesUsersByIDToken)
    }

    @Test func aVariableThatNamesAnEndpointWinsOverTheMetadata() async throws {
        let configuration = try await SignInConfiguration.load(
            environment: environment([
                "SIGNIN_REVOKE_URL": "https://provider.example/revoke",
                "SIGNIN_TOKEN_URL": "https://tokens.provider.example/token",
                "SIGNIN_REQUIRE_ISSUER": "1",
            ]),
            transport: StubProvider()
        )
        #expect(configuration.oauth2.revocationEndpoint?.absoluteString == "https://provider.example/revoke")
        #expect(configuration.oauth2.tokenEndpoint.absoluteString == "https://tokens.provider.example/token")
        #expect(configuration.oauth2.requiresIssuerInRedirect)
    }

    @Test func discoveryNeedsTheIssuerAndABadEnvironmentNeverReachesTheNetwork() async {
        let stub = StubProvider()
        let error = await #expect(throws: ConfigurationError.self) {
            try await SignInConfiguration.load(environment: environment(["SIGNIN_ISSUER": nil]), transport: stub)
        }
        #expect(error?.invalid.map(\.variable) == ["SIGNIN_DISCOVER"])
        #expect(stub.requests.withLock { $0 } == 0)
    }

    @Test func theAPIURLIsRequiredUnlessTheScopesAskForOpenID() async {
        let error = await #expect(throws: ConfigurationError.self) {
            try await SignInConfiguration.load(environment: environment(["SIGNIN_SCOPES": "read"]), transport: StubProvider())
        }
        #expect(error?.missing == ["SIGNIN_API_URL"])
    }

    @Test func anIssuerWithoutAKeySetNeedsTheAPIURL() async throws {
        let error = await #expect(throws: ConfigurationError.self) {
            try await SignInConfiguration.load(environment: Self.environment, transport: StubProvider(openID: false))
        }
        #expect(error?.invalid.map(\.variable) == ["SIGNIN_API_URL"])

        let configuration = try await SignInConfiguration.load(
            environment: environment(["SIGNIN_API_URL": "https://provider.example/api/me"]),
            transport: StubProvider(openID: false)
        )
        #expect(configuration.oauth2.openID == nil)
        #expect(!configuration.identifiesUsersByIDToken)
    }

    @Test func aFailedDiscoveryNamesTheIssuerAndTheFrameworksCodeButNoSecret() async {
        let error = await #expect(throws: ConfigurationError.self) {
            try await SignInConfiguration.load(
                environment: environment(["SIGNIN_ISSUER": "https://elsewhere.example"]), transport: StubProvider())
        }
        #expect(error?.invalid.map(\.variable) == ["SIGNIN_ISSUER"])
        #expect(error?.description.contains("s3cret-value") == false)
    }

    @Test func theSynchronousReaderPointsToLoadForDiscovery() {
        let error = #expect(throws: ConfigurationError.self) {
            try SignInConfiguration(environment: Self.environment)
        }
        #expect(error?.invalid.map(\.variable) == ["SIGNIN_DISCOVER"])
    }
}
