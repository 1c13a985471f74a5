import Foundation
import OAuth2
import Testing

/// A resource server of Tests/CredentialServers/serve.py (git over HTTP, or a
/// fake Kubernetes API) that accepts only tokens the provider accepts.
final class CredentialServer {
    let process: Subprocess
    let port: Int

    static var script: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("CredentialServers/serve.py").path
    }

    init(_ arguments: [String]) async throws {
        process = try Subprocess("/usr/bin/env", ["python3", Self.script] + arguments, environment: ProcessInfo.processInfo.environment)
        guard let port = Int(try await process.firstLineOfStdout()) else {
            throw ProviderError(description: "serve.py printed no port: \(process.stderr)")
        }
        self.port = port
    }

    /// The requests it refused so far.
    var refusals: Int { process.stderr.split(separator: "\n").filter { $0.hasSuffix(" refused") }.count }

    // Subprocess kills it when the test releases it.
}

/// Programs other than the CLI (kubectl) that may be missing.
enum Tool {
    static func which(_ name: String) -> String? {
        for directory in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":") {
            let path = "\(directory)/\(name)"
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        return nil
    }

    /// The kubectl to test with: `OAUTH2_IT_KUBECTL` (another version than
    /// the one installed, say), else the first on PATH. A path given there is
    /// used as it is, so a wrong one fails the test instead of skipping it.
    static var kubectl: String? {
        if let path = ProcessInfo.processInfo.environment["OAUTH2_IT_KUBECTL"], !path.isEmpty { return path }
        return which("kubectl")
    }
}

/// `oauth2 git-credential` under a real git, against a local git server
/// (https with a test certificate, or plain http on loopback) that wants an
/// access token the local provider accepts; and
/// `oauth2 token --format kubernetes` checked against ExecCredential's schema
/// and, when kubectl is installed, under a real kubectl.
@Suite(.enabled(if: Provider.mainIsConfigured, "needs the local provider: `make test` starts it and sets OAUTH2_IT_PROVIDER"))
struct CredentialHelperTests {
    /// A CLI with a private HOME, XDG directories and configuration, so that
    /// neither the CLI nor git reads or writes the user's own.
    static func cli() throws -> CLI {
        let cli = try CLI()
        let home = cli.directory + "/home"
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        cli.environment["HOME"] = home
        cli.environment["XDG_CONFIG_HOME"] = home + "/.config"
        cli.environment["OAUTH2_CONFIG_DIR"] = cli.directory + "/config"
        cli.environment["OAUTH2_STORE"] = cli.store
        cli.environment["GIT_CONFIG_NOSYSTEM"] = "1"
        cli.environment["GIT_TERMINAL_PROMPT"] = "0"
        cli.environment["GIT_ASKPASS"] = "/bin/false"
        cli.environment.removeValue(forKey: "GIT_SSL_NO_VERIFY")
        cli.environment.removeValue(forKey: "SSH_ASKPASS")
        cli.environment["GIT_AUTHOR_NAME"] = "Test"
        cli.environment["GIT_AUTHOR_EMAIL"] = "test@example.com"
        cli.environment["GIT_COMMITTER_NAME"] = "Test"
        cli.environment["GIT_COMMITTER_EMAIL"] = "test@example.com"
        return cli
    }

    /// Saves the provider's `password` client as `local` (answering git for
    /// `gitHost`) and signs alice in with it.
    static func signIn(_ provider: Provider, _ cli: CLI, gitHost: String? = nil) async throws {
        let client = try provider.client("password")
        let secretFile = try cli.writeFile("password.secret", client.clientSecret + "\n")
        var add = [
            "provider", "add", "local", "--token-url", provider.endpoints.token, "--revoke-url", provider.endpoints.revoke,
            "--client-id", client.clientID, "--client-secret-file", secretFile, "--scope", "read write",
        ]
        if let gitHost { add += ["--git-host", gitHost] }
        let saved = try await cli.run(add)
        #expect(saved.status == 0, "\(saved.stderr)")
        let signIn = try await cli.run(
            ["password", "--provider", "local", "--username", "alice", "--password-stdin"], input: try provider.password(of: "alice") + "\n"
        )
        #expect(signIn.status == 0, "\(signIn.stderr)")
    }

    /// A certificate for 127.0.0.1 and its key, made with openssl: the
    /// servers that speak https use it, and git and kubectl trust it as their CA.
    static func makeCertificate(_ cli: CLI) async throws -> (cert: String, key: String) {
        let (cert, key) = (cli.directory + "/cert.pem", cli.directory + "/key.pem")
        let made = try await Subprocess.run(
            try #require(Tool.which("openssl")),
            [
                "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert, "-days", "1", "-subj", "/CN=127.0.0.1",
                "-addext", "subjectAltName=IP:127.0.0.1",
            ],
            environment: cli.environment)
        #expect(made.status == 0, "\(made.stderr)")
        return (cert, key)
    }

    /// A bare repository `project.git` under `repos` with one commit.
    static func makeRepository(_ cli: CLI) async throws -> String {
        let repos = cli.directory + "/repos"
        let seed = cli.directory + "/seed"
        try FileManager.default.createDirectory(atPath: repos, withIntermediateDirectories: true)
        for command in [
            ["git", "init", "-q", "--bare", "-b", "main", repos + "/project.git"],
            ["git", "-C", repos + "/project.git", "config", "http.receivepack", "true"],
            ["git", "init", "-q", "-b", "main", seed],
        ] {
            let result = try await git(command, cli)
            #expect(result.status == 0, "\(command): \(result.stderr)")
        }
        try "hello\n".write(toFile: seed + "/README", atomically: true, encoding: .utf8)
        for command in [
            ["git", "-C", seed, "add", "README"], ["git", "-C", seed, "commit", "-q", "-m", "first"],
            ["git", "-C", seed, "push", "-q", repos + "/project.git", "main"],
        ] {
            let result = try await git(command, cli)
            #expect(result.status == 0, "\(command): \(result.stderr)")
        }
        return repos
    }

    static func git(_ arguments: [String], _ cli: CLI, input: String? = nil) async throws -> Subprocess.Result {
        try await Subprocess.run("/usr/bin/env", arguments, environment: cli.environment, input: input, timeout: .seconds(60))
    }

    /// `git -c credential.helper=… arguments…`: only this helper (the user's are cleared).
    static func gitWithHelper(_ arguments: [String], _ cli: CLI, helper: String = "--provider local") async throws -> Subprocess.Result {
        let binary = try CLI.binary()
        return try await git(
            ["git", "-c", "credential.helper=", "-c", "credential.helper=!'\(binary)' git-credential \(helper)"] + arguments, cli)
    }

    /// Revokes only the access token at the provider (the refresh token stays good).
    static func revokeAccessToken(_ provider: Provider, _ token: String) async throws {
        let client = try provider.client("password")
        var request = HTTPTransportRequest(method: .post, url: try #require(URL(string: provider.endpoints.revoke)))
        request.headers.append(HTTPField(name: .contentType, value: "application/x-www-form-urlencoded"))
        let credentials = Data("\(client.clientID):\(client.clientSecret)".utf8).base64EncodedString()
        request.headers.append(HTTPField(name: .authorization, value: "Basic \(credentials)"))
        request.body = Data("token=\(token)&token_type_hint=access_token".utf8)
        let response = try await Provider.send(request)
        #expect(response.status == 200)
    }

    /// Over https, as git hosts are: the server has a certificate of its own
    /// that git is told to trust (GIT_SSL_CAINFO) and refuses before.
    @Test func gitClonesAndPushesWithTheTokenAndFailsWithoutIt() async throws {
        let provider = try Provider.main()
        let cli = try Self.cli()
        let repos = try await Self.makeRepository(cli)
        let (cert, key) = try await Self.makeCertificate(cli)
        let server = try await CredentialServer(
            ["git", "--check-url", provider.endpoints.apiMe, "--repos", repos, "--tls-cert", cert, "--tls-key", key])
        let host = "127.0.0.1:\(server.port)"
        let remote = "https://\(host)/project.git"
        let clone = cli.directory + "/clone"

        // git verifies the server: not yet trusting its certificate, it fails before any HTTP.
        let untrusted = try await Self.git(["git", "ls-remote", remote], cli)
        #expect(untrusted.status != 0)
        #expect(untrusted.stderr.contains("certificate"), "\(untrusted.stderr)")
        #expect(server.refusals == 0)
        cli.environment["GIT_SSL_CAINFO"] = cert

        // No token yet: the helper says so on stderr, and git fails.
        let provisional = try await cli.run([
            "provider", "add", "local", "--token-url", provider.endpoints.token, "--client-id", "nobody", "--git-host", host,
        ])
        #expect(provisional.status == 0)
        let refused = try await Self.gitWithHelper(["clone", "-q", remote, clone], cli)
        #expect(refused.status != 0)
        #expect(refused.stderr.contains("error: not_authenticated"), "\(refused.stderr)")
        #expect(try await cli.run(["provider", "remove", "local"]).status == 0)

        try await Self.signIn(provider, cli, gitHost: host)
        let token = try #require(try await cli.storedToken(account: "local"))

        // git credential fill: Basic, the token as the password.
        let filled = try await Self.git(
            [
                "git", "-c", "credential.helper=", "-c", "credential.helper=!'\(try CLI.binary())' git-credential --provider local",
                "credential", "fill",
            ], cli, input: "protocol=https\nhost=\(host)\n\n")
        #expect(filled.status == 0, "\(filled.stderr)")
        #expect(filled.stdout.contains("username=oauth2\n"))
        #expect(filled.stdout.contains("password=\(token.accessToken.value)\n"))
        #expect(!filled.stderr.contains(token.accessToken.value))

        let cloned = try await Self.gitWithHelper(["clone", "-q", remote, clone], cli)
        #expect(cloned.status == 0, "\(cloned.stderr)")
        #expect(FileManager.default.fileExists(atPath: clone + "/README"))

        try "more\n".write(toFile: clone + "/more.txt", atomically: true, encoding: .utf8)
        for command in [["git", "-C", clone, "add", "more.txt"], ["git", "-C", clone, "commit", "-q", "-m", "more"]] {
            #expect(try await Self.git(command, cli).status == 0)
        }
        let pushed = try await Self.gitWithHelper(["-C", clone, "push", "-q", "origin", "main"], cli)
        #expect(pushed.status == 0, "\(pushed.stderr)")
        let log = try await Self.git(["git", "-C", repos + "/project.git", "log", "--format=%s"], cli)
        #expect(log.stdout == "more\nfirst\n")

        // The server rejects the stored access token (here: the store holds a
        // forged one beside the good refresh token): git's try fails, git
        // erases that password, the helper refreshes; the next try succeeds.
        var forged = token
        forged.accessToken = Secret("forged-access-token")
        try await FileTokenStore(directory: cli.store).save(forged, account: "local")
        let rejected = try await Self.gitWithHelper(["-C", clone, "fetch", "-q"], cli)
        #expect(rejected.status != 0)
        let renewed = try #require(try await cli.storedToken(account: "local"))
        #expect(renewed.accessToken != forged.accessToken && renewed.accessToken != token.accessToken)
        let fetched = try await Self.gitWithHelper(["-C", clone, "fetch", "-q"], cli)
        #expect(fetched.status == 0, "\(fetched.stderr)")

        // The access token revoked at the provider: this provider (DOT) ends
        // the grant with it, so the refresh after git's erase fails and the
        // token is deleted; git fails until the next sign-in.
        try await Self.revokeAccessToken(provider, renewed.accessToken.value)
        let revokedAccess = try await Self.gitWithHelper(["-C", clone, "fetch", "-q"], cli)
        #expect(revokedAccess.status != 0)
        #expect(try await cli.storedToken(account: "local") == nil)
        let afterwards = try await Self.gitWithHelper(["-C", clone, "fetch", "-q"], cli)
        #expect(afterwards.status != 0)
        #expect(afterwards.stderr.contains("error: not_authenticated"), "\(afterwards.stderr)")
        #expect(!afterwards.stderr.contains(renewed.accessToken.value))

        // Signed in again, then revoked and deleted here with oauth2 revoke: git fails again.
        let again = try await cli.run(
            ["password", "--provider", "local", "--username", "alice", "--password-stdin"], input: try provider.password(of: "alice") + "\n"
        )
        #expect(again.status == 0, "\(again.stderr)")
        #expect(try await Self.gitWithHelper(["-C", clone, "fetch", "-q"], cli).status == 0)
        // Revoked altogether (and deleted here): git fails again.
        #expect(try await cli.run(["revoke", "--provider", "local"]).status == 0)
        let revoked = try await Self.gitWithHelper(["-C", clone, "fetch", "-q"], cli)
        #expect(revoked.status != 0)
        #expect(revoked.stderr.contains("error: not_authenticated"), "\(revoked.stderr)")
    }

    @Test func theHelperAnswersOnlyForItsHost() async throws {
        let provider = try Provider.main()
        let cli = try Self.cli()
        try await Self.signIn(provider, cli, gitHost: "127.0.0.1:9")
        let token = try #require(try await cli.storedToken(account: "local"))
        func get(_ input: String, _ options: [String] = []) async throws -> Subprocess.Result {
            try await cli.run(["git-credential", "--provider", "local"] + options + ["get"], input: input)
        }
        let own = try await get("protocol=http\nhost=127.0.0.1:9\n\n")
        #expect(own.status == 0, "\(own.stderr)")
        #expect(own.stdout.hasPrefix("username=oauth2\npassword=\(token.accessToken.value)\npassword_expiry_utc="))

        for input in [
            "protocol=https\nhost=github.com\n\n", "protocol=http\nhost=127.0.0.1:10\n\n", "protocol=http\nhost=127.0.0.1\n\n",
            "host=127.0.0.1:9\n",
        ] {
            let other = try await get(input)
            #expect(other.status == 0 && other.stdout.isEmpty && other.stderr.isEmpty, "\(input): \(other.stdout) \(other.stderr)")
        }
        // Plain http only for a loopback host, unless the host is written with http://.
        #expect(try await get("protocol=http\nhost=git.example\n\n", ["--host", "git.example"]).stdout.isEmpty)
        #expect(try await get("protocol=http\nhost=git.example\n\n", ["--host", "http://git.example"]).stdout.contains("password="))
        #expect(try await get("protocol=https\nhost=git.example\n\n", ["--host", "git.example"]).stdout.contains("password="))
        // --username, and git 2.46's authtype capability.
        #expect(try await get("protocol=http\nhost=127.0.0.1:9\n\n", ["--username", "alice"]).stdout.hasPrefix("username=alice\n"))
        let bearer = try await get("capability[]=authtype\nprotocol=http\nhost=127.0.0.1:9\n\n")
        #expect(bearer.stdout.hasPrefix("capability[]=authtype\nauthtype=Bearer\ncredential=\(token.accessToken.value)\n"))
        // store does nothing; erase of another password changes nothing.
        #expect(
            try await cli.run(["git-credential", "--provider", "local", "store"], input: "protocol=http\nhost=127.0.0.1:9\npassword=x\n\n")
                .status == 0)
        let erase = try await cli.run(
            ["git-credential", "--provider", "local", "erase"],
            input: "protocol=http\nhost=127.0.0.1:9\nusername=oauth2\npassword=other\n\n")
        #expect(erase.status == 0)
        #expect(try await cli.storedToken(account: "local")?.accessToken == token.accessToken)
        // No host at all: a usage error, not a silent pass.
        let noHost = try await cli.run(
            ["git-credential", "get", "--token-url", provider.endpoints.token, "--client-id", "x"], input: "protocol=https\nhost=a\n\n")
        #expect(noHost.status == 64)
    }

    @Test func eraseOfAClientCredentialsTokenRenewsIt() async throws {
        // No refresh token: git's erase runs the grant again for a fresh token.
        let provider = try Provider.main()
        let cli = try Self.cli()
        let options = try provider.options(client: "service", for: cli)
        let got = try await cli.run(["client-credentials"] + options)
        #expect(got.status == 0, "\(got.stderr)")
        let first = try #require(try await cli.storedToken())
        #expect(first.refreshToken == nil)
        let erase = try await cli.run(
            ["git-credential", "erase", "--host", "127.0.0.1:9"] + options,
            input: "protocol=http\nhost=127.0.0.1:9\nusername=oauth2\npassword=\(first.accessToken.value)\n\n")
        #expect(erase.status == 0, "\(erase.stderr)")
        let second = try #require(try await cli.storedToken())
        #expect(second.accessToken != first.accessToken)
        #expect(second.grant?.type == TokenGrant.clientCredentialsType)
    }

    @Test func anExpiredTokenIsRefreshedByTheHelper() async throws {
        // An hour-long token made expired on both sides: the provider refuses
        // it, and the store says it has expired. (A 2-second token waited out
        // could expire again before git used the refreshed one, when the
        // helper or the provider is slow, as under ThreadSanitizer.)
        let provider = try Provider.main()
        let cli = try Self.cli()
        let repos = try await Self.makeRepository(cli)
        let server = try await CredentialServer(["git", "--check-url", provider.endpoints.apiMe, "--repos", repos])
        try await Self.signIn(provider, cli, gitHost: "127.0.0.1:\(server.port)")
        let first = try await cli.expireStoredToken(account: "local", at: provider)
        let listed = try await Self.gitWithHelper(["ls-remote", "http://127.0.0.1:\(server.port)/project.git"], cli)
        #expect(listed.status == 0, "\(listed.stderr)")
        #expect(listed.stdout.contains("refs/heads/main"))
        let second = try #require(try await cli.storedToken(account: "local"))
        #expect(second.accessToken != first.accessToken)
        #expect(server.refusals == 1) // git's first request, without credentials
    }

    // MARK: - Kubernetes

    @Test func kubernetesFormatIsAnExecCredential() async throws {
        let provider = try Provider.main()
        let cli = try Self.cli()
        try await Self.signIn(provider, cli)
        let token = try #require(try await cli.storedToken(account: "local"))
        let result = try await cli.run(["token", "--provider", "local", "--format", "kubernetes"])
        #expect(result.status == 0, "\(result.stderr)")
        let object = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8))
        #expect(ExecCredentialSchema.violations(of: object) == [])
        let status = try #require((object as? [String: Any])?["status"] as? [String: Any])
        #expect(status["token"] as? String == token.accessToken.value)
        #expect(status["expirationTimestamp"] != nil)

        // kubectl asking for v1beta1 gets it.
        let beta = try await cli.run(
            ["token", "--provider", "local", "--format", "kubernetes"],
            environment: [
                "KUBERNETES_EXEC_INFO":
                    #"{"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential","spec":{"interactive":false}}"#
            ])
        #expect(try JSONObject(beta.stdout).string("apiVersion") == "client.authentication.k8s.io/v1beta1")
    }

    /// kubectl trusts what the plugin prints until its expirationTimestamp, so
    /// an expired token is refreshed before it is printed. The token here has
    /// expired by the CLI's clock (its stored expiry an hour back) and at the
    /// provider alike, without waiting for either.
    @Test func kubernetesFormatRefreshesAnExpiredTokenFirst() async throws {
        let provider = try Provider.main()
        let cli = try Self.cli()
        try await Self.signIn(provider, cli)
        let token = try await cli.expireStoredToken(account: "local", at: provider)

        let result = try await cli.run(["token", "--provider", "local", "--format", "kubernetes"])

        #expect(result.status == 0, "\(result.stderr)")
        let object = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8))
        #expect(ExecCredentialSchema.violations(of: object) == [])
        let status = try #require((object as? [String: Any])?["status"] as? [String: Any])
        let printed = try #require(status["token"] as? String)
        let renewed = try #require(try await cli.storedToken(account: "local"))
        #expect(printed != token.accessToken.value)
        #expect(printed == renewed.accessToken.value)
        #expect(renewed.refreshToken != nil && renewed.refreshToken != token.refreshToken)
        // The new token's expiry, not the old one's: kubectl would otherwise run the plugin again at once.
        let expiration = try Date(try #require(status["expirationTimestamp"] as? String), strategy: .iso8601)
        let expiresAt = try #require(renewed.expiresAt)
        #expect(abs(expiration.timeIntervalSince(expiresAt)) < 1)
        #expect(expiration > Date().addingTimeInterval(3000))
        // And the provider takes it.
        var me = HTTPTransportRequest(url: try #require(URL(string: provider.endpoints.apiMe)))
        me.headers.append(HTTPField(name: .authorization, value: "Bearer \(printed)"))
        #expect(try await Provider.send(me).status == 200)
    }

    /// The exec credential versions (`client.authentication.k8s.io/…`) that
    /// `kubectl` takes: v1beta1, which kubectl 1.20 (Debian 12's
    /// kubernetes-client) knows and kubectl still accepts, and v1 from 1.22 on.
    static func execCredentialVersions(of kubectl: String, _ cli: CLI) async throws -> [String] {
        let result = try await Subprocess.run(
            kubectl, ["version", "--client", "-o", "json"], environment: cli.environment, timeout: .seconds(60))
        #expect(result.status == 0, "\(result.stderr)")
        let version = try #require(try JSONObject(result.stdout)["clientVersion"] as? [String: Any])
        // "20", or "32+" for a vendor's build.
        let minor = try #require(Int(String((version["minor"] as? String ?? "").prefix { $0.isNumber })), "\(result.stdout)")
        #expect(version["major"] as? String == "1", "\(result.stdout)")
        return minor >= 22 ? ["v1beta1", "v1"] : ["v1beta1"]
    }

    /// kubectl runs an exec plugin only for an https server: the fake API
    /// server gets a certificate of its own, made with openssl. Each exec
    /// credential version the kubectl takes is tried: kubectl fails when the
    /// plugin answers another version than its kubeconfig entry names, so a
    /// pass shows the CLI answered the one kubectl asked for.
    /// `OAUTH2_IT_KUBECTL` picks another kubectl than the one on PATH.
    @Test(
        .enabled(
            if: Tool.kubectl != nil && Tool.which("openssl") != nil,
            "kubectl (or openssl) is not installed: the real-kubectl test is skipped"))
    func kubectlUsesTheTokenThroughTheExecPlugin() async throws {
        let provider = try Provider.main()
        let cli = try Self.cli()
        try await Self.signIn(provider, cli)
        let (cert, key) = try await Self.makeCertificate(cli)
        let server = try await CredentialServer(
            ["kube", "--check-url", provider.endpoints.apiMe, "--tls-cert", cert, "--tls-key", key])
        let kubectl = try #require(Tool.kubectl)
        let versions = try await Self.execCredentialVersions(of: kubectl, cli)
        var kubeconfigs: [String] = []
        for version in versions {
            // interactiveMode: v1 requires it; kubectl 1.20 ignores it.
            let kubeconfig = try cli.writeFile(
                "kubeconfig-\(version)",
                """
                apiVersion: v1
                kind: Config
                clusters:
                - name: local
                  cluster:
                    server: https://127.0.0.1:\(server.port)
                    certificate-authority: \(cert)
                users:
                - name: oauth2
                  user:
                    exec:
                      apiVersion: client.authentication.k8s.io/\(version)
                      command: \(try CLI.binary())
                      args: ["token", "--provider", "local", "--format", "kubernetes"]
                      interactiveMode: Never
                contexts:
                - name: local
                  context:
                    cluster: local
                    user: oauth2
                current-context: local
                """)
            kubeconfigs.append(kubeconfig)
            let answer = try await Subprocess.run(
                kubectl, ["--kubeconfig", kubeconfig, "get", "--raw", "/api/v1/ping"], environment: cli.environment, timeout: .seconds(60))
            #expect(answer.status == 0, "\(version): \(answer.stderr)")
            #expect(answer.stdout.contains("pong"), "\(version)")
        }

        // Signed out: kubectl is refused.
        #expect(try await cli.run(["revoke", "--provider", "local"]).status == 0)
        for kubeconfig in kubeconfigs {
            let refused = try await Subprocess.run(
                kubectl, ["--kubeconfig", kubeconfig, "get", "--raw", "/api/v1/ping"], environment: cli.environment, timeout: .seconds(60))
            #expect(refused.status != 0)
            #expect(!refused.stdout.contains("pong"))
        }
    }
}
