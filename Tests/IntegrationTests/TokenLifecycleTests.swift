import Foundation
import OAuth2
import Testing

/// What happens to a token after sign-in: refresh, inspection, revocation.
@Suite(.enabled(if: Provider.mainIsConfigured, "needs the local provider: `make test` starts it and sets OAUTH2_IT_PROVIDER"))
struct TokenLifecycleTests {
    @Test func refreshRotatesTheRefreshTokenAndTheOldOneIsRefused() async throws {
        let provider = try Provider.main()
        let cli = try CLI()
        let options = try provider.options(client: "confidential", for: cli)
        let signIn = try await provider.authorize(with: cli, options: options)
        #expect(signIn.result.status == 0, "\(signIn.result.stderr)")
        let before = try #require(try await cli.storedToken()?.refreshToken)

        let refresh = try await cli.run(["refresh"] + options)
        #expect(refresh.status == 0, "\(refresh.stderr)")
        let after = try #require(try await cli.storedToken()?.refreshToken)
        #expect(after != before)

        let replay = try await TokenEndpoint.refresh(provider, client: "confidential", refreshToken: before.value)
        #expect(replay.status == 400)
        #expect(try JSONObject(replay.bodyText).string("error") == "invalid_grant")
        try await expectCallReturnsAlice(provider, cli, options)
    }

    @Test func tokenJSONShowsTheMetadataAndNeverTheToken() async throws {
        let provider = try Provider.main()
        let cli = try CLI()
        let options = try provider.options(client: "confidential", for: cli)
        #expect(try await provider.authorize(with: cli, options: options).result.status == 0)

        let json = try await cli.run(["token", "--format", "json"] + options)
        #expect(json.status == 0, "\(json.stderr)")
        let printed = try await cli.run(["token", "--print-access-token"] + options)
        #expect(printed.status == 0, "\(printed.stderr)")
        let accessToken = printed.stdout.trimmingCharacters(in: .newlines)
        let stored = try #require(try await cli.storedToken())
        #expect(accessToken == stored.accessToken.value)
        let refreshToken = try #require(stored.refreshToken?.value)

        #expect(!json.stdout.contains(accessToken))
        #expect(!json.stdout.contains(refreshToken))
        let object = try JSONObject(json.stdout)
        #expect(object.string("token_type") == "Bearer")
        #expect(object.bool("has_refresh_token") == true)
        #expect(object["scopes"] as? [String] == ["read", "write"])
        #expect((object["expires_in"] as? Int).map { $0 > 3000 } == true)
    }

    /// A run that needs no request neither loads libcurl nor starts the
    /// transport's thread (the CLI's start-up, BENCHMARKS.md); one that sends
    /// does both. The dynamic loader says what it loads (`LD_DEBUG=libs`).
    @Test func printingAValidTokenLoadsNoLibcurlAndACallDoes() async throws {
        let provider = try Provider.main()
        let cli = try CLI()
        let options = try provider.options(client: "service", for: cli)
        let granted = try await cli.run(["client-credentials"] + options)
        #expect(granted.status == 0, "\(granted.stderr)")
        let stored = try #require(try await cli.storedToken())
        let loader = ["LD_DEBUG": "libs"]

        let printed = try await cli.run(["token", "--print-access-token", "--verbose"] + options, environment: loader)
        #expect(printed.status == 0, "\(printed.stderr)")
        #expect(printed.stdout == stored.accessToken.value + "\n")
        #expect(printed.stderr.contains("calling init:"), "LD_DEBUG=libs had no effect")
        #expect(!printed.stderr.contains("libcurl.so"))
        #expect(!printed.stderr.contains("starting the HTTP transport"))

        let call = try await cli.run(["call", provider.endpoints.apiMe, "--verbose"] + options, environment: loader)
        #expect(call.status == 0, "\(call.stderr)")
        #expect(call.stderr.contains("libcurl.so.4"))
        #expect(call.stderr.components(separatedBy: "starting the HTTP transport").count == 2)
    }

    @Test func callAfterRevokeFailsWithNotAuthenticated() async throws {
        let provider = try Provider.main()
        let cli = try CLI()
        let options = try provider.options(client: "confidential", for: cli)
        let signIn = try await provider.authorize(with: cli, options: options)
        #expect(signIn.result.status == 0, "\(signIn.result.stderr)")
        let refreshToken = try #require(try await cli.storedToken()?.refreshToken)

        let revoke = try await cli.run(["revoke"] + options)
        #expect(revoke.status == 0, "\(revoke.stderr)")
        let call = try await cli.run(["call", provider.endpoints.apiMe] + options)
        #expect(call.status == 1)
        #expect(call.errorLines == ["error: not_authenticated: no token is stored for account default"])
        let replay = try await TokenEndpoint.refresh(provider, client: "confidential", refreshToken: refreshToken.value)
        #expect(replay.status == 400)
    }

    @Test func logoutWithoutATokenSucceeds() async throws {
        let provider = try Provider.main()
        let cli = try CLI()
        let result = try await cli.run(["logout"] + provider.options(client: "confidential", for: cli))
        #expect(result.status == 0, "\(result.stderr)")
    }

    @Test func aTokenWithoutTheNeededScopeIsInsufficientScope() async throws {
        let provider = try Provider.main()
        let cli = try CLI()
        let options = try provider.options(client: "service", for: cli)
        #expect(try await cli.run(["client-credentials"] + options).status == 0)
        // /api/admin needs the admin scope; DOT answers 403 with insufficient_scope in WWW-Authenticate.
        let call = try await cli.run(["call", provider.endpoints.apiAdmin] + options)
        #expect(call.status == 1)
        #expect(call.errorLines.first?.hasPrefix("error: insufficient_scope: ") == true, "\(call.stderr)")
    }

    @Test func anHTTPErrorStatusExitsOneWithHTTPError() async throws {
        let provider = try Provider.main()
        let cli = try CLI()
        let options = try provider.options(client: "service", for: cli)
        #expect(try await cli.run(["client-credentials"] + options).status == 0)
        let call = try await cli.run(["call", provider.issuer + "/api/no-such-thing"] + options)
        #expect(call.status == 1)
        #expect(
            call.errorLines.first?.hasPrefix("error: http_error: GET \(provider.issuer)/api/no-such-thing answered HTTP 404") == true,
            "\(call.stderr)")
    }
}

/// With access tokens that live 2 seconds, `call` refreshes on its own.
@Suite(.enabled(if: Provider.shortIsConfigured, "needs the 2-second provider: `make test` starts it and sets OAUTH2_IT_SHORT_PROVIDER"))
struct ShortLivedTokenTests {
    @Test func callRefreshesAnExpiredAccessTokenOnItsOwn() async throws {
        let provider = try Provider.short()
        let cli = try CLI()
        let options = try provider.options(client: "confidential", for: cli)
        #expect(try await provider.authorize(with: cli, options: options).result.status == 0)
        let before = try #require(try await cli.storedToken())

        try await Task.sleep(for: .seconds(3))
        let call = try await cli.run(["call", provider.endpoints.apiMe] + options)
        #expect(call.status == 0, "\(call.stderr)")
        #expect(try JSONObject(call.stdout).string("username") == "alice")
        let after = try #require(try await cli.storedToken())
        #expect(after.accessToken != before.accessToken)
        #expect(after.refreshToken != before.refreshToken)
    }
}

/// Direct requests to the provider's token endpoint, bypassing the CLI.
enum TokenEndpoint {
    /// A refresh token grant with the client's id and secret in the body.
    static func refresh(_ provider: Provider, client name: String, refreshToken: String) async throws -> HTTPTransportResponse {
        try await post(
            provider.endpoints.token, client: try provider.client(name), [("grant_type", "refresh_token"), ("refresh_token", refreshToken)])
    }

    /// Revokes a token (RFC 7009) with the client's id and secret in the body.
    static func revoke(_ provider: Provider, client name: String, token: String) async throws -> HTTPTransportResponse {
        try await post(provider.endpoints.revoke, client: try provider.client(name), [("token", token)])
    }

    /// A form POST with the client's credentials in the body (`client_secret_post`).
    private static func post(_ url: String, client: Provider.Client, _ fields: [(String, String)]) async throws -> HTTPTransportResponse {
        let form = (fields + [("client_id", client.clientID), ("client_secret", client.clientSecret)])
            .map { "\(encode($0.0))=\(encode($0.1))" }.joined(separator: "&")
        let request = HTTPTransportRequest(
            method: .post,
            url: try #require(URL(string: url)),
            headers: [.contentType: "application/x-www-form-urlencoded"],
            body: Data(form.utf8)
        )
        return try await Provider.send(request)
    }

    private static func encode(_ text: String) -> String {
        let unreserved = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
        return text.addingPercentEncoding(withAllowedCharacters: unreserved) ?? text
    }
}
