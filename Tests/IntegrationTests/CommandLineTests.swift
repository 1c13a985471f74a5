import Foundation
import OAuth2
import Testing

/// The CLI's contract where no provider is needed: exit statuses, the
/// `error:` line, and refusing before anything is sent.
@Suite struct CommandLineTests {
    static let endpoints = ["--authorize-url", "http://127.0.0.1:9/authorize", "--token-url", "http://127.0.0.1:9/token"]

    @Test func tokenShowsAFarFutureExpiryWithoutTrapping() async throws {
        let cli = try CLI()
        let tokenURL = try #require(URL(string: "http://127.0.0.1:9/token"))
        var token = AccessToken(accessToken: Secret("at-far-future"), expiresAt: Date(timeIntervalSince1970: 1e300))
        token.binding = TokenBinding(tokenEndpoint: tokenURL.absoluteString, clientID: "app")
        try await FileTokenStore(directory: cli.store).save(token, account: "default")

        let result = try await cli.run(["token", "--json", "--store", cli.store, "--client-id", "app"] + Self.endpoints)

        #expect(result.status == 0, "\(result.stderr)")
        #expect((try JSONObject(result.stdout)["expires_in"] as? Int) == Int(Int32.max))
        #expect(!result.stdout.contains("at-far-future"))
    }

    @Test func aMissingRequiredOptionIsAUsageError() async throws {
        let cli = try CLI()
        let result = try await cli.run(["password", "--store", cli.store, "--client-id", "app"] + Self.endpoints)
        #expect(result.status == 64)
        #expect(result.stderr.hasPrefix("error: usage: Missing expected argument '--username <username>'"), "\(result.stderr)")
    }

    @Test func aMissingClientIDIsAUsageError() async throws {
        let cli = try CLI()
        let result = try await cli.run(["client-credentials", "--store", cli.store] + Self.endpoints)
        #expect(result.status == 64)
        #expect(result.errorLines == ["error: usage: the client id is needed: --client-id (or OAUTH2_CLIENT_ID)"])
    }

    @Test func theClientSecretIsNotAcceptedAsAFlagValue() async throws {
        let cli = try CLI()
        let result = try await cli.run(
            ["client-credentials", "--client-secret", "s3cret", "--client-id", "app", "--store", cli.store] + Self.endpoints)
        #expect(result.status == 64)
        #expect(result.stderr.hasPrefix("error: usage: Unknown option '--client-secret'"), "\(result.stderr)")
    }

    @Test func aMissingSecretFileFailsWithAnErrorLine() async throws {
        let cli = try CLI()
        let result = try await cli.run(
            ["client-credentials", "--client-id", "app", "--client-secret-file", cli.directory + "/missing", "--store", cli.store]
                + Self.endpoints
        )
        #expect(result.status == 1)
        #expect(
            result.errorLines == [
                "error: invalid_configuration: cannot use the client secret file \(cli.directory)/missing: No such file or directory"
            ])
    }

    @Test func theEnvironmentSuppliesOptionsAndFlagsWin() async throws {
        let cli = try CLI()
        let environment = ["OAUTH2_CLIENT_ID": "app", "OAUTH2_TOKEN_URL": "http://127.0.0.1:9/token", "OAUTH2_STORE": cli.store]
        // The flag's insecure URL wins over the variable's loopback one, so the framework refuses it.
        let result = try await cli.run(["client-credentials", "--token-url", "http://id.example/token"], environment: environment)
        #expect(result.status == 1)
        #expect(result.errorLines.first?.hasPrefix("error: insecure_endpoint: ") == true, "\(result.stderr)")
    }

    @Test func aClosedStdinEndsThePromptLineBeforeTheError() async throws {
        let cli = try CLI()
        let result = try await cli.run(["authorize", "--client-id", "app", "--store", cli.store] + Self.endpoints, input: "")
        #expect(result.status == 1)
        #expect(result.stderr.contains("Paste the redirect URL: \nerror: invalid_redirect_url: "), "\(result.stderr)")
    }

    @Test func extraAuthorizeParametersAreAddedToTheURL() async throws {
        let cli = try CLI()
        let result = try await cli.run(
            ["authorize", "--param", "prompt=consent", "--client-id", "app", "--store", cli.store] + Self.endpoints, input: "")
        let url = try #require(result.stdout.split(separator: "\n").first)
        #expect(URLComponents(string: String(url))?.queryItems?.contains(URLQueryItem(name: "prompt", value: "consent")) == true)
    }

    @Test func anExtraParameterCannotReplaceOneOfTheFlows() async throws {
        let cli = try CLI()
        let result = try await cli.run(
            ["authorize", "--param", "state=chosen", "--client-id", "app", "--store", cli.store] + Self.endpoints, input: "")
        #expect(result.status == 1)
        #expect(result.errorLines.first?.hasPrefix("error: invalid_configuration: ") == true, "\(result.stderr)")
        #expect(result.stdout.isEmpty)
    }

    @Test func callRefusesAPlainHTTPURLToAnotherHost() async throws {
        let cli = try CLI()
        let result = try await cli.run(["call", "http://api.example/me", "--client-id", "app", "--store", cli.store] + Self.endpoints)
        #expect(result.status == 1)
        #expect(result.errorLines.first?.hasPrefix("error: insecure_endpoint: ") == true, "\(result.stderr)")
    }

    @Test func tokenWithoutAStoredTokenIsNotAuthenticated() async throws {
        let cli = try CLI()
        let result = try await cli.run(["token", "--json", "--store", cli.store, "--account", "nobody"])
        #expect(result.status == 1)
        #expect(result.errorLines == ["error: not_authenticated: no token is stored for account nobody"])
        #expect(result.stdout.isEmpty)
    }

    @Test func versionPrintsTheVersion() async throws {
        let cli = try CLI()
        let result = try await cli.run(["--version"])
        #expect(result.status == 0)
        #expect(result.stdout == "0.1.0\n")
    }

    @Test(arguments: ["authorize", "password", "client-credentials", "device", "refresh", "token", "call", "revoke", "logout"])
    func everyCommandHasHelpWithAnExample(command: String) async throws {
        let cli = try CLI()
        let result = try await cli.run([command, "--help"])
        #expect(result.status == 0)
        #expect(result.stdout.contains("Example:"))
        #expect(result.stdout.contains("--client-secret-file"))
    }
}
