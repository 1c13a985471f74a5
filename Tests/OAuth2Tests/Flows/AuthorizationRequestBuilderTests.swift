import Foundation
import Testing
@testable import OAuth2

@Suite struct AuthorizationRequestBuilderTests {
    private func make(
        configuration: OAuth2Configuration? = nil,
        redirectURI: URL = FlowFixtures.redirectURI,
        scopes: [String] = ["openid", "profile"],
        additionalParameters: [(String, String)] = []
    ) throws -> PendingAuthorization {
        try AuthorizationRequestBuilder.make(
            configuration: configuration ?? FlowFixtures.configuration(),
            redirectURI: redirectURI,
            scopes: scopes,
            additionalParameters: additionalParameters,
            now: FlowFixtures.requestedAt
        )
    }

    /// The query as a form parser on the provider's side reads it.
    private func query(of url: URL) throws -> [(String, String)] {
        let text = url.absoluteString
        let query = try #require(text.split(separator: "?", maxSplits: 1).last)
        return try FormURLEncoding.decode(query)
    }

    private func names(_ pairs: [(String, String)]) -> [String] {
        pairs.map(\.0)
    }

    private func value(_ name: String, in pairs: [(String, String)]) -> String? {
        pairs.first { $0.0 == name }?.1
    }

    private func makeError(
        configuration: OAuth2Configuration? = nil,
        redirectURI: URL = FlowFixtures.redirectURI,
        scopes: [String] = ["openid"],
        additionalParameters: [(String, String)] = []
    ) throws -> OAuth2Error? {
        let configuration = try configuration ?? FlowFixtures.configuration()
        return FlowFixtures.error { () throws(OAuth2Error) in
            try AuthorizationRequestBuilder.make(
                configuration: configuration,
                redirectURI: redirectURI,
                scopes: scopes,
                additionalParameters: additionalParameters,
                now: FlowFixtures.requestedAt
            )
        }
    }

    @Test func urlCarriesEveryParameterInOrder() throws {
        let pending = try make(additionalParameters: [("prompt", "consent")])
        let pairs = try query(of: pending.url)
        #expect(
            names(pairs) == [
                "response_type", "client_id", "redirect_uri", "scope", "state", "code_challenge", "code_challenge_method", "prompt",
            ])
        #expect(value("response_type", in: pairs) == "code")
        #expect(value("client_id", in: pairs) == "client-id")
        #expect(value("redirect_uri", in: pairs) == "https://app.example.com/callback")
        #expect(value("scope", in: pairs) == "openid profile")
        #expect(value("state", in: pairs) == pending.state)
        #expect(value("code_challenge", in: pairs) == PKCE.challenge(for: pending.codeVerifier))
        #expect(value("code_challenge_method", in: pairs) == "S256")
        #expect(value("prompt", in: pairs) == "consent")
        #expect(pending.url.absoluteString.hasPrefix("https://id.example.com/oauth/authorize?response_type=code&"))
    }

    @Test func pendingAuthorizationRecordsTheRequest() throws {
        let configuration = try FlowFixtures.configuration(issuer: "https://id.example.com", requiresIssuer: true)
        let pending = try make(configuration: configuration)
        #expect(pending.redirectURI == FlowFixtures.redirectURI)
        #expect(pending.scopes == ["openid", "profile"])
        #expect(pending.expectedIssuer == "https://id.example.com")
        #expect(pending.requiresIssuer)
        #expect(pending.createdAt == FlowFixtures.requestedAt)
        #expect(pending.state.count == 43)
        #expect(pending.codeVerifier.value.count == 43)
    }

    @Test func spacesAreEncodedAsPercent20AndReservedCharactersEscaped() throws {
        let pending = try make(
            scopes: ["openid", "https://scopes.example.com/read"], additionalParameters: [("login_hint", "a+b@example.com & co")])
        let text = pending.url.absoluteString
        #expect(text.contains("scope=openid%20https%3A%2F%2Fscopes.example.com%2Fread"))
        #expect(text.contains("login_hint=a%2Bb%40example.com%20%26%20co"))
        #expect(!text.contains("+"))
        let pairs = try query(of: pending.url)
        #expect(value("login_hint", in: pairs) == "a+b@example.com & co")
        #expect(value("scope", in: pairs) == "openid https://scopes.example.com/read")
    }

    @Test func foundationReadsTheQueryTheSameWay() throws {
        let pending = try make(additionalParameters: [("login_hint", "a+b c")])
        let components = try #require(URLComponents(url: pending.url, resolvingAgainstBaseURL: false))
        let items = try #require(components.queryItems)
        #expect(items.first { $0.name == "scope" }?.value == "openid profile")
        #expect(items.first { $0.name == "login_hint" }?.value == "a+b c")
        #expect(items.first { $0.name == "redirect_uri" }?.value == "https://app.example.com/callback")
    }

    @Test func scopeIsOmittedWhenEmpty() throws {
        let pairs = try query(of: make(scopes: []).url)
        #expect(!names(pairs).contains("scope"))
    }

    @Test func everyRequestHasAFreshStateAndVerifier() throws {
        let first = try make()
        let second = try make()
        #expect(first.state != second.state)
        #expect(first.codeVerifier != second.codeVerifier)
    }

    @Test func keepsTheEndpointsExistingQuery() throws {
        let configuration = try FlowFixtures.configuration(
            authorizationEndpoint: URL(string: "https://id.example.com/authorize?tenant=acme&x=a%20b")!)
        let pending = try make(configuration: configuration)
        #expect(pending.url.absoluteString.hasPrefix("https://id.example.com/authorize?tenant=acme&x=a%20b&response_type=code&"))
        let pairs = try query(of: pending.url)
        #expect(value("tenant", in: pairs) == "acme")
        #expect(value("x", in: pairs) == "a b")
    }

    @Test func handlesAnEndpointWithAnEmptyQuery() throws {
        let configuration = try FlowFixtures.configuration(authorizationEndpoint: URL(string: "https://id.example.com/authorize?")!)
        let pending = try make(configuration: configuration)
        #expect(pending.url.absoluteString.hasPrefix("https://id.example.com/authorize?response_type=code&"))
    }

    @Test func refusesAnAdditionalParameterOverridingOneOfOurs() throws {
        for name in ["state", "code_challenge", "code_challenge_method", "redirect_uri", "client_id", "response_type", "scope"] {
            let error = try makeError(additionalParameters: [(name, "x")])
            #expect(error?.code == .invalidConfiguration, "\(name)")
        }
    }

    @Test func refusesAnAdditionalParameterOverridingTheEndpointsQuery() throws {
        let configuration = try FlowFixtures.configuration(
            authorizationEndpoint: URL(string: "https://id.example.com/authorize?tenant=acme")!)
        let error = try makeError(configuration: configuration, additionalParameters: [("tenant", "other")])
        #expect(error?.code == .invalidConfiguration)
    }

    @Test func refusesAnEndpointQuerySettingOneOfOurs() throws {
        let configuration = try FlowFixtures.configuration(
            authorizationEndpoint: URL(string: "https://id.example.com/authorize?response_type=token")!)
        #expect(try makeError(configuration: configuration)?.code == .invalidConfiguration)
    }

    @Test func refusesARepeatedOrEmptyAdditionalParameter() throws {
        #expect(try makeError(additionalParameters: [("prompt", "a"), ("prompt", "b")])?.code == .invalidConfiguration)
        #expect(try makeError(additionalParameters: [("", "a")])?.code == .invalidConfiguration)
    }

    @Test func requiresAnAuthorizationEndpoint() throws {
        let configuration = try FlowFixtures.configuration(authorizationEndpoint: nil)
        #expect(try makeError(configuration: configuration)?.code == .invalidConfiguration)
    }

    private func configuration(codeChallengeMethods: [String]) throws -> OAuth2Configuration {
        let metadata = AuthorizationServerMetadata(
            issuer: "https://id.example.com",
            authorizationEndpoint: FlowFixtures.authorizationEndpoint,
            tokenEndpoint: FlowFixtures.tokenEndpoint,
            codeChallengeMethodsSupported: codeChallengeMethods
        )
        return try OAuth2Configuration(metadata: metadata, clientID: "client-id")
    }

    @Test func aProviderWhoseMetadataListsPKCEMethodsWithoutS256IsRefused() throws {
        for methods in [["plain"], ["plain", "S512"]] {
            let error = try makeError(configuration: configuration(codeChallengeMethods: methods))
            #expect(error?.code == .invalidConfiguration, "\(methods)")
            #expect(error?.message.contains("S256") == true)
        }
    }

    @Test(arguments: [["S256"], ["plain", "S256"], []])
    func aProviderWhoseMetadataListsS256OrNoPKCEMethodsGetsS256(_ methods: [String]) throws {
        let pending = try make(configuration: configuration(codeChallengeMethods: methods))
        let pairs = try query(of: pending.url)
        #expect(value("code_challenge_method", in: pairs) == "S256")
        #expect(value("code_challenge", in: pairs) == PKCE.challenge(for: pending.codeVerifier))
    }

    @Test func refusesARedirectURIWithAFragment() throws {
        #expect(try makeError(redirectURI: URL(string: "https://app.example.com/cb#x")!)?.code == .invalidConfiguration)
    }

    @Test func refusesARelativeRedirectURI() throws {
        #expect(try makeError(redirectURI: URL(string: "/callback")!)?.code == .invalidConfiguration)
        #expect(try makeError(redirectURI: URL(string: "https:///callback")!)?.code == .invalidConfiguration)
    }

    @Test func acceptsLoopbackAndPrivateUseRedirectURIs() throws {
        #expect(throws: Never.self) { try make(redirectURI: URL(string: "http://127.0.0.1:8400/callback")!) }
        #expect(throws: Never.self) { try make(redirectURI: URL(string: "com.example.app:/oauth2redirect")!) }
    }

    @Test func refusesScopesThatAreNotScopeTokens() throws {
        #expect(try makeError(scopes: ["read write"])?.code == .invalidConfiguration)
        #expect(try makeError(scopes: [""])?.code == .invalidConfiguration)
        #expect(try makeError(scopes: ["a\"b"])?.code == .invalidConfiguration)
        #expect(try makeError(scopes: ["a\nb"])?.code == .invalidConfiguration)
    }
}
