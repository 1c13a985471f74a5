import Foundation
import Testing
@testable import OAuth2

@Suite struct TokenRequestBuilderTests {
    private func form(_ request: HTTPTransportRequest) throws -> [String: String] {
        let body = try #require(request.body)
        let pairs = try FormURLEncoding.decode(String(decoding: body, as: UTF8.self)[...])
        var fields: [String: String] = [:]
        for (name, value) in pairs {
            #expect(fields.updateValue(value, forKey: name) == nil, "\(name) repeated")
        }
        return fields
    }

    private func basic(_ request: HTTPTransportRequest) throws -> (String, String)? {
        guard let header = request.headers[.authorization] else { return nil }
        #expect(header.hasPrefix("Basic "))
        let data = try #require(Data(base64Encoded: String(header.dropFirst("Basic ".count))))
        let text = String(decoding: data, as: UTF8.self)
        let parts = text.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
        #expect(parts.count == 2)
        return (try FormURLEncoding.decodeComponent(parts[0]), try FormURLEncoding.decodeComponent(parts[1]))
    }

    private let codeGrant = Grant.authorizationCode(
        code: Secret("the-code"),
        redirectURI: URL(string: "https://app.example.com/callback")!,
        codeVerifier: Secret("the-verifier")
    )

    @Test func everyRequestIsAFormPOSTThatDoesNotFollowRedirects() throws {
        let configuration = try FlowFixtures.configuration()
        let requests = [
            try TokenRequestBuilder.tokenRequest(for: codeGrant, configuration: configuration),
            try TokenRequestBuilder.revocationRequest(token: Secret("t"), tokenTypeHint: nil, configuration: configuration),
            try TokenRequestBuilder.deviceAuthorizationRequest(scopes: [], configuration: configuration),
        ]
        for request in requests {
            #expect(request.method == .post)
            #expect(request.headers[.contentType] == "application/x-www-form-urlencoded")
            #expect(request.headers[.accept] == "application/json")
            #expect(request.redirects == .never)
            #expect(request.timeout == configuration.requestTimeout)
            #expect(request.maxResponseSize == configuration.maxResponseSize)
        }
        #expect(requests.map(\.url) == [FlowFixtures.tokenEndpoint, FlowFixtures.revocationEndpoint, FlowFixtures.deviceEndpoint])
    }

    @Test func authorizationCodeGrantCarriesCodeRedirectURIAndVerifier() throws {
        let request = try TokenRequestBuilder.tokenRequest(for: codeGrant, configuration: try FlowFixtures.configuration())
        #expect(
            try form(request) == [
                "grant_type": "authorization_code",
                "code": "the-code",
                "redirect_uri": "https://app.example.com/callback",
                "code_verifier": "the-verifier",
            ])
    }

    @Test func authorizationCodeGrantWithoutVerifierOmitsIt() throws {
        let grant = Grant.authorizationCode(code: Secret("c"), redirectURI: FlowFixtures.redirectURI, codeVerifier: nil)
        let request = try TokenRequestBuilder.tokenRequest(for: grant, configuration: try FlowFixtures.configuration())
        #expect(try form(request)["code_verifier"] == nil)
    }

    @Test func basicAuthenticationPutsCredentialsInTheHeaderOnly() throws {
        let configuration = try FlowFixtures.configuration(clientAuthentication: .clientSecretBasic)
        let request = try TokenRequestBuilder.tokenRequest(for: .clientCredentials(scopes: []), configuration: configuration)
        let credentials = try #require(try basic(request))
        #expect(credentials.0 == "client-id")
        #expect(credentials.1 == "client-secret-value")
        let fields = try form(request)
        #expect(fields["client_secret"] == nil)
        #expect(fields["client_id"] == nil)
    }

    @Test func postAuthenticationPutsCredentialsInTheBody() throws {
        let configuration = try FlowFixtures.configuration(clientAuthentication: .clientSecretPost)
        let request = try TokenRequestBuilder.tokenRequest(for: .clientCredentials(scopes: []), configuration: configuration)
        #expect(request.headers[.authorization] == nil)
        let fields = try form(request)
        #expect(fields["client_id"] == "client-id")
        #expect(fields["client_secret"] == "client-secret-value")
    }

    @Test func publicClientSendsItsIDAndNoSecret() throws {
        let configuration = try FlowFixtures.configuration(clientSecret: nil)
        #expect(configuration.clientAuthentication == .none)
        let request = try TokenRequestBuilder.tokenRequest(for: codeGrant, configuration: configuration)
        #expect(request.headers[.authorization] == nil)
        let fields = try form(request)
        #expect(fields["client_id"] == "client-id")
        #expect(fields["client_secret"] == nil)
    }

    @Test func basicAuthorizationFormEncodesIDAndSecretBeforeBase64() throws {
        let id = "id:+/%&= ?#~é"
        let secret = "se:cr+et/%&= ?#~"
        let header = TokenRequestBuilder.basicAuthorization(clientID: id, secret: Secret(secret))
        let data = try #require(Data(base64Encoded: String(header.dropFirst("Basic ".count))))
        let text = String(decoding: data, as: UTF8.self)
        #expect(text == "id%3A%2B%2F%25%26%3D+%3F%23%7E%C3%A9:se%3Acr%2Bet%2F%25%26%3D+%3F%23%7E")
        let parts = text.split(separator: ":")
        #expect(parts.count == 2)
        #expect(try FormURLEncoding.decodeComponent(parts[0]) == id)
        #expect(try FormURLEncoding.decodeComponent(parts[1]) == secret)
    }

    @Test func passwordGrantCarriesCredentialsAndScope() throws {
        let grant = Grant.password(username: "alice@example.com", password: Secret("p@ss word&"), scopes: ["read", "write"])
        let request = try TokenRequestBuilder.tokenRequest(for: grant, configuration: try FlowFixtures.configuration())
        #expect(
            try form(request) == [
                "grant_type": "password", "username": "alice@example.com", "password": "p@ss word&", "scope": "read write",
            ])
    }

    @Test func clientCredentialsGrantCarriesScope() throws {
        let request = try TokenRequestBuilder.tokenRequest(
            for: .clientCredentials(scopes: ["api"]), configuration: try FlowFixtures.configuration())
        #expect(try form(request) == ["grant_type": "client_credentials", "scope": "api"])
    }

    @Test func emptyScopesAreOmitted() throws {
        let configuration = try FlowFixtures.configuration()
        for grant in [
            Grant.clientCredentials(scopes: []), .refreshToken(Secret("r"), scopes: []),
            .password(username: "u", password: Secret("p"), scopes: []),
        ] {
            #expect(try form(try TokenRequestBuilder.tokenRequest(for: grant, configuration: configuration))["scope"] == nil)
        }
        #expect(try form(TokenRequestBuilder.deviceAuthorizationRequest(scopes: [], configuration: configuration))["scope"] == nil)
    }

    @Test func refreshGrantCarriesTheRefreshToken() throws {
        let request = try TokenRequestBuilder.tokenRequest(
            for: .refreshToken(Secret("refresh+/="), scopes: ["a"]), configuration: try FlowFixtures.configuration())
        #expect(try form(request) == ["grant_type": "refresh_token", "refresh_token": "refresh+/=", "scope": "a"])
    }

    @Test func assertionGrantUsesTheTypeAsGrantType() throws {
        let type = "urn:ietf:params:oauth:grant-type:jwt-bearer"
        let request = try TokenRequestBuilder.tokenRequest(
            for: .assertion(type: type, assertion: Secret("eyJ.a.b"), scopes: []), configuration: try FlowFixtures.configuration())
        #expect(try form(request) == ["grant_type": type, "assertion": "eyJ.a.b"])
    }

    @Test func deviceCodeGrantUsesTheRFC8628GrantType() throws {
        let request = try TokenRequestBuilder.tokenRequest(
            for: .deviceCode(Secret("dev")), configuration: try FlowFixtures.configuration(clientSecret: nil))
        #expect(
            try form(request) == [
                "grant_type": "urn:ietf:params:oauth:grant-type:device_code", "device_code": "dev", "client_id": "client-id",
            ])
    }

    @Test func revocationCarriesTokenAndHint() throws {
        let request = try TokenRequestBuilder.revocationRequest(
            token: Secret("tok"), tokenTypeHint: "refresh_token", configuration: try FlowFixtures.configuration())
        #expect(try form(request) == ["token": "tok", "token_type_hint": "refresh_token"])
        #expect(try basic(request)?.0 == "client-id")
    }

    @Test func revocationWithoutEndpointIsAConfigurationError() throws {
        var configuration = try FlowFixtures.configuration()
        configuration.revocationEndpoint = nil
        let error = FlowFixtures.error { () throws(OAuth2Error) in
            try TokenRequestBuilder.revocationRequest(token: Secret("t"), tokenTypeHint: nil, configuration: configuration)
        }
        #expect(error?.code == .invalidConfiguration)
    }

    @Test func deviceAuthorizationCarriesScopeAndPublicClientID() throws {
        let request = try TokenRequestBuilder.deviceAuthorizationRequest(
            scopes: ["openid", "email"], configuration: try FlowFixtures.configuration(clientSecret: nil))
        #expect(try form(request) == ["scope": "openid email", "client_id": "client-id"])
    }

    @Test func deviceAuthorizationWithoutEndpointIsAConfigurationError() throws {
        var configuration = try FlowFixtures.configuration()
        configuration.deviceAuthorizationEndpoint = nil
        let error = FlowFixtures.error { () throws(OAuth2Error) in
            try TokenRequestBuilder.deviceAuthorizationRequest(scopes: [], configuration: configuration)
        }
        #expect(error?.code == .invalidConfiguration)
    }

    @Test func requestDescriptionShowsNoSecret() throws {
        let request = try TokenRequestBuilder.tokenRequest(
            for: codeGrant, configuration: try FlowFixtures.configuration(clientAuthentication: .clientSecretBasic))
        let text = "\(request)"
        #expect(!text.contains("the-code"))
        #expect(!text.contains("the-verifier"))
        #expect(!text.contains(TokenRequestBuilder.basicAuthorization(clientID: "client-id", secret: Secret("client-secret-value"))))
    }
}
