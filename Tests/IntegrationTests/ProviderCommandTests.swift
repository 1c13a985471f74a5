import Foundation
import OAuth2
import Testing

/// Saved providers and presets, through the CLI; no provider and no network
/// needed (nothing here can reach github.com: presets are checked by what
/// they print, and a dry run prints the authorize URL without fetching).
@Suite struct ProviderCommandTests {
    /// A CLI whose configuration directory is in its temporary directory.
    static func cli() throws -> CLI {
        let cli = try CLI()
        cli.environment["OAUTH2_CONFIG_DIR"] = cli.directory + "/config"
        cli.environment["OAUTH2_STORE"] = cli.store
        return cli
    }

    static func show(_ cli: CLI, _ arguments: [String]) async throws -> [String: Any] {
        let result = try await cli.run(["provider", "show"] + arguments)
        #expect(result.status == 0, "\(result.stderr)")
        return try JSONObject(result.stdout).fields
    }

    @Test func addListShowRemoveRoundTrip() async throws {
        let cli = try Self.cli()
        let secretFile = try cli.writeFile("secret", "s3cret-value\n")
        let add = try await cli.run([
            "provider", "add", "corp", "--token-url", "https://id.corp.example/token",
            "--authorize-url", "https://id.corp.example/authorize", "--client-id", "cli", "--scope", "read write",
            "--client-secret-file", secretFile, "--git-host", "git.corp.example", "--param", "prompt=login",
        ])
        #expect(add.status == 0, "\(add.stderr)")

        let configFile = cli.directory + "/config/providers.json"
        let attributes = try FileManager.default.attributesOfItem(atPath: configFile)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        let directoryAttributes = try FileManager.default.attributesOfItem(atPath: cli.directory + "/config")
        #expect((directoryAttributes[.posixPermissions] as? Int) == 0o700)
        let content = try String(contentsOfFile: configFile, encoding: .utf8)
        #expect(!content.contains("s3cret-value"))
        #expect(content.contains(secretFile))

        let list = try await cli.run(["provider", "list"])
        #expect(list.status == 0)
        #expect(list.stdout == "corp\thttps://id.corp.example/token\n")

        let shown = try await Self.show(cli, ["corp"])
        #expect(shown["saved"] as? Bool == true)
        let settings = try #require(shown["settings"] as? [String: Any])
        #expect(settings["client_id"] as? String == "cli")
        #expect(settings["scope"] as? String == "read write")
        #expect(settings["client_secret_file"] as? String == secretFile)
        #expect(settings["authorize_parameters"] as? [String] == ["prompt=login"])

        let again = try await cli.run(["provider", "add", "corp", "--token-url", "https://other.example/token"])
        #expect(again.status == 64)
        #expect(again.errorLines.first?.contains("saved already") == true, "\(again.stderr)")

        let remove = try await cli.run(["provider", "remove", "corp"])
        #expect(remove.status == 0, "\(remove.stderr)")
        #expect(try await cli.run(["provider", "list"]).stdout.isEmpty)
        let missing = try await cli.run(["provider", "remove", "corp"])
        #expect(missing.status == 64)
    }

    /// `provider add --webfinger`: the issuer that the identifier's host
    /// names by WebFinger (OpenID Connect Discovery 1.0 §2, RFC 7033 §4) is saved as `--issuer` is.
    @Test func webFingerFindsTheIssuerThatIsSaved() async throws {
        let server = try await WebFingerServer.start(issuer: "https://id.corp.example")
        let cli = try Self.cli()
        let identifier = "acct:me@127.0.0.1:\(server.port)"
        let add = try await cli.run(["provider", "add", "corp", "--webfinger", identifier, "--client-id", "cli"])
        #expect(add.status == 0, "\(add.stderr)")
        let settings = try #require(try await Self.show(cli, ["corp"])["settings"] as? [String: Any])
        #expect(settings["issuer"] as? String == "https://id.corp.example")
        #expect(settings["client_id"] as? String == "cli")
        let request = try await server.process.stderrLine(startingWith: "GET ")
        #expect(request.contains("resource=acct%3Ame%40127.0.0.1%3A\(server.port)"), "\(request)")
        #expect(request.contains("rel=http%3A%2F%2Fopenid.net%2Fspecs%2Fconnect%2F1.0%2Fissuer"), "\(request)")
    }

    /// Over https with the host's own CA (`--ca-file`): a URL identifier that
    /// says https is asked over https, even on loopback. The JRD is a static
    /// file here; its content type is sniffed from its `{`.
    @Test func webFingerOverHTTPSTrustsTheGivenCA() async throws {
        let server = try await ClientMetadataDocumentServer.start()
        try FileManager.default.createDirectory(
            at: server.directory.appendingPathComponent("www/.well-known"), withIntermediateDirectories: true)
        try server.serve(
            Data(#"{"links": [{"rel": "http://openid.net/specs/connect/1.0/issuer", "href": "https://id.corp.example"}]}"#.utf8),
            as: ".well-known/webfinger")
        let cli = try Self.cli()
        let caFile = try cli.writeFile("ca.pem", String(decoding: server.caPEM, as: UTF8.self))
        let identifier = "https://127.0.0.1:\(server.port)/me"
        let untrusted = try await cli.run(["provider", "add", "corp", "--webfinger", identifier, "--client-id", "cli"])
        #expect(untrusted.status == 1)
        #expect(untrusted.errorLines.first?.hasPrefix("error: tls_error: ") == true, "\(untrusted.stderr)")
        let add = try await cli.run(["provider", "add", "corp", "--webfinger", identifier, "--client-id", "cli", "--ca-file", caFile])
        #expect(add.status == 0, "\(add.stderr)")
        let settings = try #require(try await Self.show(cli, ["corp"])["settings"] as? [String: Any])
        #expect(settings["issuer"] as? String == "https://id.corp.example")
        await server.stop()
    }

    @Test func aWebFingerAnswerWithoutAnIssuerSavesNothing() async throws {
        let server = try await WebFingerServer.start(issuer: nil)
        let cli = try Self.cli()
        let add = try await cli.run(["provider", "add", "corp", "--webfinger", "acct:me@127.0.0.1:\(server.port)", "--client-id", "cli"])
        #expect(add.status == 1)
        #expect(add.errorLines.first?.hasPrefix("error: webfinger_failed: ") == true, "\(add.stderr)")
        #expect(!FileManager.default.fileExists(atPath: cli.directory + "/config/providers.json"))
    }

    @Test func webFingerAndIssuerTogetherAreAUsageError() async throws {
        let cli = try Self.cli()
        let add = try await cli.run([
            "provider", "add", "corp", "--webfinger", "me@corp.example", "--issuer", "https://id.corp.example", "--client-id", "cli",
        ])
        #expect(add.status == 64)
    }

    @Test func aClientSecretValueIsRefusedAndNothingIsWritten() async throws {
        let cli = try Self.cli()
        let result = try await cli.run([
            "provider", "add", "corp", "--token-url", "https://id.corp.example/token", "--client-id", "cli",
            "--client-secret", "s3cret-value",
        ])
        #expect(result.status == 64)
        #expect(result.errorLines.first?.contains("never saved") == true, "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: cli.directory + "/config/providers.json"))
        #expect(!result.stderr.contains("s3cret-value"))
    }

    @Test func theSecretComesFromTheVariableTheProviderNames() async throws {
        let cli = try Self.cli()
        let add = try await cli.run([
            "provider", "add", "corp", "--token-url", "http://127.0.0.1:9/token", "--client-id", "cli",
            "--client-secret-env", "CORP_SECRET",
        ])
        #expect(add.status == 0, "\(add.stderr)")
        let content = try String(contentsOfFile: cli.directory + "/config/providers.json", encoding: .utf8)
        #expect(content.contains("\"client_secret_env\" : \"CORP_SECRET\""))
        // Without the variable the provider cannot be used, and says why.
        let result = try await cli.run(["client-credentials", "--provider", "corp"])
        #expect(result.status == 64)
        #expect(result.errorLines == ["error: usage: the provider corp takes its client secret from $CORP_SECRET, which is not set"])
    }

    @Test func aWrongAuthMethodIsAParserErrorAndNothingIsWritten() async throws {
        let cli = try Self.cli()
        let result = try await cli.run([
            "provider", "add", "corp", "--token-url", "https://id.corp.example/token", "--auth-method", "digest",
        ])
        #expect(result.status == 64)
        #expect(
            result.errorLines.first?.hasPrefix("error: usage: The value 'digest' is invalid for '--auth-method <auth-method>'") == true,
            "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: cli.directory + "/config/providers.json"))
    }

    @Test func theAuthMethodIsSavedAsGivenAndAWrongSavedOneNamesTheProvider() async throws {
        let cli = try Self.cli()
        let add = try await cli.run([
            "provider", "add", "corp", "--token-url", "http://127.0.0.1:9/token", "--client-id", "cli", "--auth-method", "post",
        ])
        #expect(add.status == 0, "\(add.stderr)")
        let settings = try #require(try await Self.show(cli, ["corp"])["settings"] as? [String: Any])
        #expect(settings["auth_method"] as? String == "post")

        // A providers.json edited by hand is read at use, not by the parser.
        let path = cli.directory + "/config/providers.json"
        let content = try String(contentsOfFile: path, encoding: .utf8)
        try content.replacingOccurrences(of: "\"post\"", with: "\"digest\"").write(toFile: path, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
        let result = try await cli.run(["client-credentials", "--provider", "corp"])
        #expect(result.status == 64)
        #expect(
            result.errorLines == [
                "error: usage: the auth method of the provider corp must be basic, post, client_secret_basic, client_secret_post, client_secret_jwt, private_key_jwt, tls_client_auth, self_signed_tls_client_auth or none, not digest"
            ], "\(result.stderr)")
    }

    @Test func aConfigFileOthersMayWriteIsRefused() async throws {
        let cli = try Self.cli()
        #expect(try await cli.run(["provider", "add", "corp", "--token-url", "https://id.corp.example/token"]).status == 0)
        try FileManager.default.setAttributes([.posixPermissions: 0o666], ofItemAtPath: cli.directory + "/config/providers.json")
        let result = try await cli.run(["provider", "list"])
        #expect(result.status == 1)
        #expect(result.errorLines.first?.contains("group or others may write it") == true, "\(result.stderr)")
    }

    @Test func flagsWinOverTheEnvironmentOverTheSavedProviderOverThePreset() async throws {
        let cli = try Self.cli()
        let add = try await cli.run([
            "provider", "add", "gh", "--preset", "github", "--client-id", "saved-id", "--scope", "repo",
            "--authorize-url", "https://github.example/authorize",
        ])
        #expect(add.status == 0, "\(add.stderr)")
        func authorizeURL(_ extra: [String], environment: [String: String] = [:]) async throws -> URLComponents {
            let result = try await cli.run(["authorize", "--print-url", "--provider", "gh"] + extra, environment: environment)
            #expect(result.status == 0, "\(result.stderr)")
            return try #require(URLComponents(string: result.stdout.trimmingCharacters(in: .newlines)))
        }
        func query(_ url: URLComponents, _ name: String) -> String? {
            url.queryItems?.first { $0.name == name }?.value
        }
        // The saved provider over its preset.
        let saved = try await authorizeURL([])
        #expect(saved.host == "github.example")
        #expect(query(saved, "client_id") == "saved-id")
        #expect(query(saved, "scope") == "repo")
        // A variable over the saved provider.
        let environment = try await authorizeURL([], environment: ["OAUTH2_CLIENT_ID": "env-id", "OAUTH2_SCOPE": "read:user"])
        #expect(query(environment, "client_id") == "env-id")
        #expect(query(environment, "scope") == "read:user")
        // A flag over the variable.
        let flag = try await authorizeURL(["--client-id", "flag-id"], environment: ["OAUTH2_CLIENT_ID": "env-id"])
        #expect(query(flag, "client_id") == "flag-id")
        // OAUTH2_PROVIDER names the provider too.
        let variable = try await cli.run(["authorize", "--print-url"], environment: ["OAUTH2_PROVIDER": "gh"])
        #expect(variable.stdout.hasPrefix("https://github.example/authorize?"), "\(variable.stderr)")
    }

    @Test func anUnknownProviderIsAUsageError() async throws {
        let cli = try Self.cli()
        let result = try await cli.run(["token", "--provider", "nowhere"])
        #expect(result.status == 64)
        #expect(
            result.errorLines.first?.hasPrefix("error: usage: no saved provider or preset is named nowhere") == true, "\(result.stderr)")
    }

    @Test func tokensOfDifferentProvidersAreKeptApart() async throws {
        let cli = try Self.cli()
        for name in ["one", "two"] {
            #expect(
                try await cli.run(["provider", "add", name, "--token-url", "http://127.0.0.1:9/\(name)", "--client-id", name]).status == 0)
        }
        var token = AccessToken(accessToken: Secret("at-one"), expiresAt: Date().addingTimeInterval(3600))
        token.binding = TokenBinding(tokenEndpoint: "http://127.0.0.1:9/one", clientID: "one")
        try await FileTokenStore(directory: cli.store).save(token, account: "one")
        let one = try await cli.run(["token", "--provider", "one", "--print-access-token"])
        #expect(one.stdout == "at-one\n", "\(one.stderr)")
        let two = try await cli.run(["token", "--provider", "two", "--print-access-token"])
        #expect(two.status == 1)
        #expect(two.errorLines.first?.hasPrefix("error: not_authenticated") == true, "\(two.stderr)")
    }

    // MARK: - Presets

    @Test func githubPreset() async throws {
        let cli = try Self.cli()
        let shown = try await Self.show(cli, ["github"])
        #expect(shown["saved"] as? Bool == false)
        let settings = try #require(shown["settings"] as? [String: Any])
        #expect(settings["authorize_url"] as? String == "https://github.com/login/oauth/authorize")
        #expect(settings["token_url"] as? String == "https://github.com/login/oauth/access_token")
        #expect(settings["device_url"] as? String == "https://github.com/login/device/code")
        #expect(settings["issuer"] == nil)
        #expect(settings["revoke_url"] == nil)
        #expect(settings["git_host"] as? String == "github.com")
        #expect(settings["git_username"] as? String == "x-access-token")

        let result = try await cli.run([
            "authorize", "--print-url", "--provider", "github", "--client-id", "Iv1.abc", "--scope", "repo read:user",
        ])
        #expect(result.status == 0, "\(result.stderr)")
        let url = try #require(URLComponents(string: result.stdout.trimmingCharacters(in: .newlines)))
        #expect(url.host == "github.com" && url.path == "/login/oauth/authorize")
        #expect(url.queryItems?.first { $0.name == "scope" }?.value == "repo read:user")
        #expect(url.queryItems?.first { $0.name == "code_challenge_method" }?.value == "S256")
    }

    @Test func googlePresetAsksForARefreshToken() async throws {
        let cli = try Self.cli()
        let settings = try #require(try await Self.show(cli, ["google"])["settings"] as? [String: Any])
        #expect(settings["issuer"] as? String == "https://accounts.google.com")
        #expect(settings["token_url"] as? String == "https://oauth2.googleapis.com/token")
        #expect(settings["device_url"] as? String == "https://oauth2.googleapis.com/device/code")
        #expect(settings["authorize_parameters"] as? [String] == ["access_type=offline", "prompt=consent"])
        // Google's ID tokens name either spelling of the issuer (Google Identity, "Authenticate with a backend server").
        #expect(settings["issuer_aliases"] as? [String] == ["accounts.google.com"])

        // The dry run fetches nothing (not even the issuer's configuration).
        let result = try await cli.run(["authorize", "--print-url", "--provider", "google", "--client-id", "x.apps.googleusercontent.com"])
        #expect(result.status == 0, "\(result.stderr)")
        let url = try #require(URLComponents(string: result.stdout.trimmingCharacters(in: .newlines)))
        #expect(url.host == "accounts.google.com")
        let items = url.queryItems ?? []
        #expect(items.contains(URLQueryItem(name: "access_type", value: "offline")))
        #expect(items.contains(URLQueryItem(name: "prompt", value: "consent")))
        #expect(items.contains(URLQueryItem(name: "scope", value: "openid email profile")))
        // A --param replaces the preset's parameter of the same name.
        let chosen = try await cli.run(
            ["authorize", "--print-url", "--provider", "google", "--client-id", "x", "--param", "prompt=select_account"])
        let chosenItems = URLComponents(string: chosen.stdout.trimmingCharacters(in: .newlines))?.queryItems ?? []
        #expect(chosenItems.filter { $0.name == "prompt" } == [URLQueryItem(name: "prompt", value: "select_account")])
    }

    @Test func microsoftPresetPerTenant() async throws {
        let cli = try Self.cli()
        let common = try #require(try await Self.show(cli, ["microsoft"])["settings"] as? [String: Any])
        #expect(common["token_url"] as? String == "https://login.microsoftonline.com/common/oauth2/v2.0/token")
        #expect(common["device_url"] as? String == "https://login.microsoftonline.com/common/oauth2/v2.0/devicecode")
        #expect((common["scope"] as? String)?.split(separator: " ").contains("offline_access") == true)
        // The multi-tenant endpoints' issuer is a template ("OpenID Connect on the Microsoft identity platform"):
        // discovered at common's location, ID tokens checked against it filled with their tid.
        #expect(common["issuer"] as? String == "https://login.microsoftonline.com/common/v2.0")
        #expect(common["issuer_placeholder"] as? String == "{tenantid}")
        #expect(common["issuer_claim"] as? String == "tid")
        let domain = try #require(
            try await Self.show(cli, ["microsoft", "--tenant", "contoso.onmicrosoft.com"])["settings"] as? [String: Any])
        #expect(domain["issuer"] == nil)

        let tenant = "72f988bf-86f1-41af-91ab-2d7cd011db47"
        let specific = try #require(try await Self.show(cli, ["entra", "--tenant", tenant])["settings"] as? [String: Any])
        #expect(specific["authorize_url"] as? String == "https://login.microsoftonline.com/\(tenant)/oauth2/v2.0/authorize")
        #expect(specific["issuer"] as? String == "https://login.microsoftonline.com/\(tenant)/v2.0")

        // --tenant on any command, through OAUTH2_TENANT too.
        let result = try await cli.run(
            ["authorize", "--print-url", "--provider", "microsoft", "--client-id", "app"], environment: ["OAUTH2_TENANT": "organizations"])
        #expect(result.stdout.hasPrefix("https://login.microsoftonline.com/organizations/oauth2/v2.0/authorize?"), "\(result.stderr)")
        let bad = try await cli.run(["provider", "show", "microsoft", "--tenant", "a/b"])
        #expect(bad.status == 64)
    }

    /// "Sign in with Apple REST API": Apple's endpoints, client_secret_post, form_post.
    @Test func applePresetNamesApplesEndpointsAndAsksForAFormPost() async throws {
        let cli = try Self.cli()
        let apple = try #require(try await Self.show(cli, ["apple"])["settings"] as? [String: Any])
        #expect(apple["authorize_url"] as? String == "https://appleid.apple.com/auth/authorize")
        #expect(apple["token_url"] as? String == "https://appleid.apple.com/auth/token")
        #expect(apple["revoke_url"] as? String == "https://appleid.apple.com/auth/revoke")
        #expect(apple["issuer"] as? String == "https://appleid.apple.com")
        #expect(apple["auth_method"] == nil)
        #expect(apple["scope"] as? String == "openid name email")
        let result = try await cli.run(["authorize", "--print-url", "--provider", "apple", "--client-id", "com.example.web"])
        let items = URLComponents(string: result.stdout.trimmingCharacters(in: .newlines))?.queryItems ?? []
        #expect(items.contains(URLQueryItem(name: "response_mode", value: "form_post")), "\(result.stderr)")
    }

    @Test func gitlabPresetAndSelfHosted() async throws {
        let cli = try Self.cli()
        let hosted = try #require(try await Self.show(cli, ["gitlab"])["settings"] as? [String: Any])
        #expect(hosted["issuer"] as? String == "https://gitlab.com")
        #expect(hosted["token_url"] as? String == "https://gitlab.com/oauth/token")
        #expect(hosted["device_url"] as? String == "https://gitlab.com/oauth/authorize_device")
        #expect(hosted["git_host"] as? String == "gitlab.com")
        #expect(hosted["git_username"] as? String == "oauth2")

        let own = try #require(
            try await Self.show(cli, ["gitlab", "--gitlab-url", "https://git.example:8443/"])["settings"] as? [String: Any])
        #expect(own["authorize_url"] as? String == "https://git.example:8443/oauth/authorize")
        #expect(own["issuer"] as? String == "https://git.example:8443")
        #expect(own["git_host"] as? String == "git.example:8443")

        let insecure = try await cli.run(["provider", "show", "gitlab", "--gitlab-url", "http://git.example"])
        #expect(insecure.status == 64)
    }

    @Test func aSavedProviderOfTheSameNameWinsOverThePreset() async throws {
        let cli = try Self.cli()
        #expect(try await cli.run(["provider", "add", "github", "--token-url", "https://ghe.example/token"]).status == 0)
        let shown = try await Self.show(cli, ["github"])
        #expect(shown["saved"] as? Bool == true)
        #expect((shown["settings"] as? [String: Any])?["token_url"] as? String == "https://ghe.example/token")
    }

    // MARK: - Completions, help

    @Test(arguments: ["bash", "zsh", "fish"])
    func completionScriptsKnowTheNewCommands(shell: String) async throws {
        let cli = try Self.cli()
        let result = try await cli.run(["--generate-completion-script", shell])
        #expect(result.status == 0, "\(result.stderr)")
        // fish writes options without their dashes; the value lists (formats, presets, auth methods) are in all three.
        for word in ["git-credential", "provider", "format", "kubernetes", "microsoft", "client_secret_jwt"] {
            #expect(result.stdout.contains(word), "\(shell) completion lacks \(word)")
        }
    }

    /// `--provider` completes to the saved providers and the presets: the
    /// scripts call `oauth2 ---completion <command> -- --provider <word index> <cursor> <words…>`.
    @Test func providerCompletesToSavedProvidersAndPresets() async throws {
        let cli = try Self.cli()
        #expect(try await cli.run(["provider", "add", "corp", "--token-url", "https://id.corp.example/token"]).status == 0)
        let result = try await cli.run([
            "---completion", "authorize", "--", "--provider", "3", "0", "oauth2", "authorize", "--provider", "",
        ])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.split(separator: "\n") == ["corp", "github", "google", "microsoft", "gitlab", "apple"])
    }

    @Test func helpDescribesProvidersHelpersAndCompletions() async throws {
        let cli = try Self.cli()
        let result = try await cli.run(["--help"])
        #expect(result.status == 0)
        for text in ["--generate-completion-script", "provider add", "git-credential", "--format kubernetes", "NO_COLOR"] {
            #expect(result.stdout.contains(text), "the help lacks \(text)")
        }
        for command in [["provider", "add"], ["provider", "list"], ["provider", "show"], ["git-credential"]] {
            let help = try await cli.run(command + ["--help"])
            #expect(help.status == 0)
            #expect(help.stdout.contains("Example:"), "\(command) --help lacks an example")
        }
    }
}

/// A WebFinger host on 127.0.0.1 (plain http: loopback), python3's
/// http.server: `/.well-known/webfinger` answers a JRD whose issuer link
/// names `issuer` (no issuer link when `nil`); each request line goes to stderr.
struct WebFingerServer {
    let process: Subprocess
    let port: Int

    private static let script = """
        import http.server, json, sys
        links = [{"rel": "http://openid.net/specs/connect/1.0/issuer", "href": sys.argv[1]}] if sys.argv[1] else []
        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a): pass
            def do_GET(self):
                print("GET " + self.path, file=sys.stderr, flush=True)
                found = self.path.startswith("/.well-known/webfinger?")
                body = json.dumps({"subject": "acct:me@example.com", "links": links} if found else {}).encode()
                self.send_response(200 if found else 404)
                self.send_header("Content-Type", "application/jrd+json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        print(server.server_address[1], flush=True)
        server.serve_forever()
        """

    static func start(issuer: String?) async throws -> WebFingerServer {
        let process = try Subprocess(
            "/usr/bin/env", ["python3", "-c", script, issuer ?? ""], environment: ProcessInfo.processInfo.environment)
        guard let port = Int(try await process.firstLineOfStdout().trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw ProviderError(description: "the WebFinger server did not start: \(process.stderr)")
        }
        return WebFingerServer(process: process, port: port)
    }
    // Subprocess kills it when the test releases it.
}
