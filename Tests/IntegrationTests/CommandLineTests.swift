import Foundation
import OAuth2
import OAuth2Testing
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

        let result = try await cli.run(["token", "--format", "json", "--store", cli.store, "--client-id", "app"] + Self.endpoints)

        #expect(result.status == 0, "\(result.stderr)")
        #expect((try JSONObject(result.stdout)["expires_in"] as? Int) == Int(Int32.max))
        #expect(!result.stdout.contains("at-far-future"))
    }

    /// Saves `token` for the account `default`, issued to the client `app` at `endpoints`' token URL.
    static func store(_ token: AccessToken, in cli: CLI) async throws {
        var token = token
        token.binding = TokenBinding(tokenEndpoint: "http://127.0.0.1:9/token", clientID: "app")
        try await FileTokenStore(directory: cli.store).save(token, account: "default")
    }

    @Test func tokenShowsIDTokenClaimsWithoutTheirControlCharacters() async throws {
        let cli = try CLI()
        let now = Date().timeIntervalSince1970.rounded(.down)
        let idToken = try IDToken(claims: [
            "iss": .string("https://id.example\u{1B}[2J"), "sub": .string("user\u{202E}1"), "aud": .string("app"),
            "exp": .number(now + 3600), "iat": .number(now),
            "name": .string("Mallory\u{1B}]0;owned\u{07}\u{1B}[31m"), "email": .string("m\u{9B}31m@example.com"),
        ])
        try await Self.store(
            AccessToken(accessToken: Secret("at-claims"), expiresAt: Date().addingTimeInterval(3600), idToken: idToken), in: cli)
        let options = ["--store", cli.store, "--client-id", "app"] + Self.endpoints

        let text = try await cli.run(["token"] + options)
        #expect(text.status == 0, "\(text.stderr)")
        for forbidden in ["\u{1B}", "\u{07}", "\u{9B}", "\u{202E}"] {
            #expect(!text.stdout.contains(forbidden), "\(text.stdout.debugDescription)")
        }
        #expect(text.stdout.contains("name: Mallory]0;owned[31m\n"), "\(text.stdout.debugDescription)")
        #expect(text.stdout.contains("signed in as: user1 at https://id.example[2J "), "\(text.stdout.debugDescription)")
        #expect(text.stdout.contains("email: m31m@example.com\n"), "\(text.stdout.debugDescription)")

        let json = try await cli.run(["token", "--format", "json"] + options)
        #expect(json.status == 0, "\(json.stderr)")
        let claims = try #require(try JSONObject(json.stdout)["id_token"] as? [String: Any])
        #expect(claims["name"] as? String == "Mallory]0;owned[31m")
        #expect(claims["email"] as? String == "m31m@example.com")
        #expect(claims["sub"] as? String == "user1")
    }

    // MARK: - git-credential

    static let gitHost = ["--host", "127.0.0.1:9"]

    /// git's request naming the loopback host, with `password` when given.
    static func gitRequest(password: String? = nil) -> String {
        "protocol=http\nhost=127.0.0.1:9\n" + (password.map { "username=oauth2\npassword=\($0)\n" } ?? "") + "\n"
    }

    @Test func gitCredentialGetAnswersAFarFutureExpiryWithoutTrapping() async throws {
        let cli = try CLI()
        try await Self.store(AccessToken(accessToken: Secret("at-far-future"), expiresAt: Date(timeIntervalSince1970: 1e300)), in: cli)
        let result = try await cli.run(
            ["git-credential", "get", "--store", cli.store, "--client-id", "app"] + Self.gitHost + Self.endpoints,
            input: Self.gitRequest())
        #expect(result.status == 0, "\(result.stderr)")
        #expect(
            result.stdout == "username=oauth2\npassword=at-far-future\npassword_expiry_utc=253402300799\n",
            "\(result.stdout.debugDescription)")
    }

    @Test func gitCredentialGetAnswersAFarPastExpiryWithoutTrapping() async throws {
        let cli = try CLI()
        try await Self.store(AccessToken(accessToken: Secret("at-far-past"), expiresAt: Date(timeIntervalSince1970: -1e300)), in: cli)
        let result = try await cli.run(
            ["git-credential", "get", "--store", cli.store, "--client-id", "app"] + Self.gitHost + Self.endpoints,
            input: Self.gitRequest())
        #expect(result.status == 0, "\(result.stderr)")
        // An expiry in 1970: git drops a password that has expired.
        #expect(result.stdout == "username=oauth2\npassword=at-far-past\npassword_expiry_utc=0\n", "\(result.stdout.debugDescription)")
    }

    @Test(arguments: [TokenGrant.jwtBearerType, TokenGrant.clientCredentialsType])
    func gitCredentialEraseKeepsATokenOfAGrantThisConfigurationCannotRunAgain(grant: String) async throws {
        let cli = try CLI()
        var token = AccessToken(accessToken: Secret("at-machine"), expiresAt: Date().addingTimeInterval(3600))
        token.grant = TokenGrant(type: grant, scopes: [])
        try await Self.store(token, in: cli)
        // A public client (no secret, no assertion grant) can run neither grant.
        let result = try await cli.run(
            ["git-credential", "erase", "--store", cli.store, "--client-id", "app"] + Self.gitHost + Self.endpoints,
            input: Self.gitRequest(password: "at-machine"))
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("which this configuration cannot run again, so it is kept"), "\(result.stderr)")
        #expect(try await cli.storedToken()?.accessToken == Secret("at-machine"))
    }

    @Test func gitCredentialEraseDeletesARejectedTokenNothingCanRenew() async throws {
        let cli = try CLI()
        var token = AccessToken(accessToken: Secret("at-user"), expiresAt: Date().addingTimeInterval(3600))
        token.grant = TokenGrant(type: "authorization_code", scopes: [])
        try await Self.store(token, in: cli)
        let result = try await cli.run(
            ["git-credential", "erase", "--store", cli.store, "--client-id", "app"] + Self.gitHost + Self.endpoints,
            input: Self.gitRequest(password: "at-user"))
        #expect(result.status == 0, "\(result.stderr)")
        #expect(try await cli.storedToken() == nil)
    }

    @Test func gitCredentialEraseWaitsForTheAccountLockAndSparesATokenStoredMeanwhile() async throws {
        let cli = try CLI()
        var token = AccessToken(accessToken: Secret("at-rejected"), expiresAt: Date().addingTimeInterval(3600))
        token.grant = TokenGrant(type: "authorization_code", scopes: [])
        try await Self.store(token, in: cli)
        // Another process holds the lock (refreshing, say) while git erases.
        let holder = try await AccountLockHolder.hold(try FileTokenStore(directory: cli.store), account: "default")
        let erase = try cli.start(
            ["git-credential", "erase", "--store", cli.store, "--client-id", "app"] + Self.gitHost + Self.endpoints)
        erase.write(Self.gitRequest(password: "at-rejected"))
        erase.closeInput()
        for _ in 0..<20 {
            try await Task.sleep(for: .milliseconds(100))
            #expect(try await cli.storedToken()?.accessToken == Secret("at-rejected"), "erased without the account lock")
        }
        // The holder stores a new token before it lets go.
        try await Self.store(AccessToken(accessToken: Secret("at-new"), expiresAt: Date().addingTimeInterval(3600)), in: cli)
        try await holder.release()
        let result = try await erase.wait()
        #expect(result.status == 0, "\(result.stderr)")
        #expect(try await cli.storedToken()?.accessToken == Secret("at-new"))
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

    @Test func parWithoutAnEndpointIsAUsageError() async throws {
        let cli = try CLI()
        let result = try await cli.run(["authorize", "--par", "--client-id", "app", "--store", cli.store] + Self.endpoints, input: "")
        #expect(result.status == 64)
        #expect(
            result.errorLines.first?.hasPrefix("error: usage: --par needs the pushed authorization request endpoint") == true,
            "\(result.stderr)")
        #expect(result.stdout.isEmpty)
    }

    @Test func aParURLThatIsNotAnHTTPURLIsAUsageError() async throws {
        let cli = try CLI()
        let result = try await cli.run(
            ["authorize", "--par", "--par-url", "ftp://idp.example/par", "--client-id", "app", "--store", cli.store] + Self.endpoints,
            input: "")
        #expect(result.status == 64)
        #expect(result.stderr.contains("--par-url must be an absolute http(s) URL"), "\(result.stderr)")
    }

    @Test func parPushesBeforeAnyURLIsPrinted() async throws {
        // Nothing listens on port 9: the push fails, and no authorize URL was printed before it.
        let cli = try CLI()
        let result = try await cli.run(
            ["authorize", "--par", "--par-url", "http://127.0.0.1:9/par", "--client-id", "app", "--store", cli.store] + Self.endpoints,
            input: "")
        #expect(result.status == 1)
        #expect(result.errorLines.first?.hasPrefix("error: transport_error: ") == true, "\(result.stderr)")
        #expect(result.stdout.isEmpty)
    }

    @Test func aRequestObjectWithoutTheClientKeyIsAUsageError() async throws {
        let cli = try CLI()
        let result = try await cli.run(
            ["authorize", "--request-object", "--client-id", "app", "--store", cli.store] + Self.endpoints, input: "")
        #expect(result.status == 64)
        #expect(
            result.errorLines.first?.hasPrefix("error: usage: --request-object needs the client's private key") == true, "\(result.stderr)")
    }

    @Test func callRefusesAPlainHTTPURLToAnotherHost() async throws {
        let cli = try CLI()
        let result = try await cli.run(["call", "http://api.example/me", "--client-id", "app", "--store", cli.store] + Self.endpoints)
        #expect(result.status == 1)
        #expect(result.errorLines.first?.hasPrefix("error: insecure_endpoint: ") == true, "\(result.stderr)")
    }

    @Test func tokenWithoutAStoredTokenIsNotAuthenticated() async throws {
        let cli = try CLI()
        let result = try await cli.run(["token", "--format", "json", "--store", cli.store, "--account", "nobody"])
        #expect(result.status == 1)
        #expect(result.errorLines == ["error: not_authenticated: no token is stored for account nobody"])
        #expect(result.stdout.isEmpty)
    }

    // MARK: - token --format

    @Test func printAccessTokenIsTheShortSpellingOfFormatAccessToken() async throws {
        let cli = try CLI()
        try await Self.store(AccessToken(accessToken: Secret("at-script"), expiresAt: Date().addingTimeInterval(3600)), in: cli)
        let options = ["--store", cli.store, "--client-id", "app"] + Self.endpoints
        for spelling in [["--print-access-token"], ["--format", "access-token"], ["--print-access-token", "--format", "access-token"]] {
            let result = try await cli.run(["token"] + spelling + options)
            #expect(result.status == 0, "\(spelling): \(result.stderr)")
            #expect(result.stdout == "at-script\n", "\(spelling)")
        }
    }

    @Test(arguments: ["text", "json", "kubernetes"])
    func printAccessTokenWithAnotherFormatIsAUsageError(format: String) async throws {
        let cli = try CLI()
        try await Self.store(AccessToken(accessToken: Secret("at-script"), expiresAt: Date().addingTimeInterval(3600)), in: cli)
        let result = try await cli.run(
            ["token", "--print-access-token", "--format", format, "--store", cli.store, "--client-id", "app"] + Self.endpoints)
        #expect(result.status == 64)
        #expect(
            result.errorLines == [
                "error: usage: --print-access-token is --format access-token: it cannot be combined with --format \(format)"
            ],
            "\(result.stderr)")
        #expect(result.stdout.isEmpty)
    }

    @Test func theJSONFlagIsRefusedWithItsNewSpelling() async throws {
        let cli = try CLI()
        try await Self.store(AccessToken(accessToken: Secret("at-script"), expiresAt: Date().addingTimeInterval(3600)), in: cli)
        let result = try await cli.run(["token", "--json", "--store", cli.store, "--client-id", "app"] + Self.endpoints)
        #expect(result.status == 64)
        #expect(result.errorLines == ["error: usage: --json is now --format json"], "\(result.stderr)")
        #expect(result.stdout.isEmpty)
    }

    /// `oauth2 <command> --help` as words one space apart: help wraps at 80
    /// columns, wherever a line happens to break.
    static func help(_ command: String) async throws -> String {
        let result = try await CLI().run([command, "--help"])
        #expect(result.status == 0, "\(result.stderr)")
        return result.stdout.split(whereSeparator: \.isWhitespace).joined(separator: " ")
    }

    @Test func tokenHelpListsTheFormatsAndNotTheJSONFlag() async throws {
        let help = try await Self.help("token")
        #expect(help.contains("--format <format>"), "\(help)")
        #expect(help.contains("(values: text, json, access-token, kubernetes)"), "\(help)")
        #expect(help.contains("--print-access-token The same as --format access-token"), "\(help)")
        #expect(!help.contains("--json"), "\(help)")
    }

    // MARK: - --auth-method

    static let authMethodNames =
        "basic, post, client_secret_basic, client_secret_post, client_secret_jwt, private_key_jwt, tls_client_auth, self_signed_tls_client_auth"

    @Test func aWrongAuthMethodIsAParserErrorListingTheNames() async throws {
        let cli = try CLI()
        let result = try await cli.run(
            ["client-credentials", "--auth-method", "digest", "--client-id", "app", "--store", cli.store] + Self.endpoints)
        #expect(result.status == 64)
        #expect(
            result.errorLines == [
                "error: usage: The value 'digest' is invalid for '--auth-method <auth-method>'. Please provide one of the following:"
            ], "\(result.stderr)")
        for name in Self.authMethodNames.split(separator: ", ") + ["none"] {
            #expect(result.stderr.contains("\n  - \(name)\n"), "\(result.stderr)")
        }
    }

    @Test func theHelpListsTheAuthMethods() async throws {
        let help = try await Self.help("client-credentials")
        #expect(help.contains("(values: \(Self.authMethodNames), none)"), "\(help)")
    }

    @Test func aWrongAuthMethodInTheEnvironmentIsAUsageErrorNamingTheVariable() async throws {
        let cli = try CLI()
        let result = try await cli.run(
            ["client-credentials", "--client-id", "app", "--store", cli.store] + Self.endpoints,
            environment: ["OAUTH2_AUTH_METHOD": "digest"])
        #expect(result.status == 64)
        #expect(
            result.errorLines == ["error: usage: OAUTH2_AUTH_METHOD must be \(Self.authMethodNames) or none, not digest"],
            "\(result.stderr)")
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
