import Foundation
import OAuth2
import Testing

/// `oauth2 call URL` with nothing configured, against the provider's
/// protected resources (RFC 9728 metadata, DCR, resource indicators): the
/// whole dance through the CLI, as a person or a script runs it.
@Suite(.enabled(if: Provider.mainIsConfigured, "needs the local provider: `make test` starts it and sets OAUTH2_IT_PROVIDER"))
struct CallDiscoveryCommandTests {
    /// A CLI with its configuration directory and store in its temporary directory.
    static func cli() throws -> CLI {
        let cli = try CLI()
        cli.environment["OAUTH2_CONFIG_DIR"] = cli.directory + "/config"
        cli.environment["OAUTH2_STORE"] = cli.store
        return cli
    }

    /// A client ID metadata document for the CLI (a public client on a
    /// loopback redirect), served over https by a server whose CA the
    /// provider of `resources` is told to trust.
    static func cliMetadataDocument(trustedBy resources: ProtectedResources) async throws -> ClientMetadataDocumentServer {
        let server = try await ClientMetadataDocumentServer.start()
        try server.serve(
            Data(
                """
                {"client_id": "\(server.url())", "client_name": "oauth2 CLI test", "redirect_uris": ["http://127.0.0.1/callback"],
                 "grant_types": ["authorization_code", "refresh_token"], "response_types": ["code"], "token_endpoint_auth_method": "none"}
                """.utf8))
        try await resources.trustForClientMetadata(server.caPEM)
        return server
    }

    /// Runs `oauth2 call url` and signs in with the scripted browser each time
    /// it prints an authorize URL (`signIns` of them), pasting the redirect on
    /// stdin, or letting the browser follow it to the listener with `--listen`.
    static func call(
        _ url: String, _ cli: CLI, _ provider: Provider, signIns: Int, arguments: [String] = []
    ) async throws -> (result: Subprocess.Result, authorizeURLs: [String]) {
        let listens = arguments.contains("--listen")
        let command = try cli.start(["call", url] + arguments)
        var urls: [String] = []
        for index in 0..<signIns {
            let authorizeURL = try await command.lineOfStdout(index)
            urls.append(authorizeURL)
            let redirect = try await provider.browse(authorizeURL, follow: listens)
            if !listens { command.write(redirect + "\n") }
        }
        command.closeInput()
        return (try await command.wait(), urls)
    }

    /// The JSON the resource answered: the last stdout line.
    static func answer(_ result: Subprocess.Result) throws -> JSONObject {
        let line = try #require(result.stdout.split(separator: "\n").last, "no answer on stdout: \(result.stderr)")
        return try JSONObject(String(line))
    }

    /// `oauth2 provider show NAME` as JSON, and the raw text.
    static func show(_ name: String, _ cli: CLI) async throws -> (JSONObject, String) {
        let result = try await cli.run(["provider", "show", name])
        #expect(result.status == 0, "\(result.stderr)")
        return (try JSONObject(result.stdout), result.stdout)
    }

    /// The provider name the CLI makes from an issuer: host, -port, -path segments.
    static func providerName(_ issuer: String) throws -> String {
        let url = try #require(URL(string: issuer))
        var parts: [String] = [url.host ?? ""]
        if let port = url.port { parts.append(String(port)) }
        parts += url.path.split(separator: "/").map(String.init)
        return parts.joined(separator: "-")
    }

    /// One query parameter of a URL.
    static func parameter(_ name: String, in url: String) -> [String] {
        URLComponents(string: url)?.queryItems?.filter { $0.name == name }.compactMap(\.value) ?? []
    }

    @Test func aBareURLGivesASignedAnswerAfterOneSignInByPasting() async throws {
        let provider = try Provider.main()
        let resources = try ProtectedResources.main()
        let a = try resources.resource("a")
        let cli = try Self.cli()

        let (result, urls) = try await Self.call(a.hello, cli, provider, signIns: 1)
        #expect(result.status == 0, "\(result.stderr)")
        let authorizeURL = try #require(urls.first)
        // MCP: PKCE S256 and the resource (RFC 8707) on the authorization request.
        #expect(Self.parameter("code_challenge_method", in: authorizeURL) == ["S256"])
        #expect(Self.parameter("resource", in: authorizeURL) == [a.resource])
        let answer = try Self.answer(result)
        #expect(answer.string("resource") == a.resource)
        #expect(answer.string("username") == "alice")
        #expect((answer["audience"] as? [String]) == [a.resource])

        // Saved as a provider named after the authorization server.
        let name = try Self.providerName(resources.issuer)
        let (shown, _) = try await Self.show(name, cli)
        let settings = try #require(shown["settings"] as? [String: Any])
        #expect(settings["issuer"] as? String == resources.issuer)
        #expect(settings["resources"] as? [String] == [a.resource])
        let clientID = try #require(settings["client_id"] as? String)
        #expect(answer.string("client_id") == clientID)
        // The code request carried the resource too.
        let tokenRequests = try await resources.tokenRequests(clientID: clientID)
        #expect(tokenRequests.filter { $0.grantType == "authorization_code" }.map(\.resource) == [[a.resource]])
    }

    /// Two processes calling a new URL at once on one store register once:
    /// the registration is made under the store's lock, and the second reads the store again under it.
    @Test func twoProcessesCallingANewURLAtOnceRegisterOnce() async throws {
        let provider = try Provider.main()
        let resources = try ProtectedResources.main()
        let a = try resources.resource("a")
        let cli = try Self.cli()

        let commands = [try cli.start(["call", a.hello]), try cli.start(["call", a.hello])]
        // Both print their authorize URL before either signs in: both are past identification.
        var authorizeURLs: [String] = []
        for command in commands { authorizeURLs.append(try await command.lineOfStdout(0)) }
        for (command, authorizeURL) in zip(commands, authorizeURLs) {
            command.write(try await provider.browse(authorizeURL, follow: false) + "\n")
            command.closeInput()
        }
        for command in commands {
            let result = try await command.wait()
            #expect(result.status == 0, "\(result.stderr)")
            #expect(try Self.answer(result).string("username") == "alice")
        }
        let clientIDs = authorizeURLs.flatMap { Self.parameter("client_id", in: $0) }
        #expect(clientIDs.count == 2)
        #expect(Set(clientIDs).count == 1, "\(clientIDs)")
    }

    @Test func theListenerReceivesTheRedirectOfACallThatSignsInByItself() async throws {
        let provider = try Provider.main()
        let resources = try ProtectedResources.main()
        let a = try resources.resource("a")
        let cli = try Self.cli()

        let (result, urls) = try await Self.call(a.hello, cli, provider, signIns: 1, arguments: ["--listen"])
        #expect(result.status == 0, "\(result.stderr)")
        let authorizeURL = try #require(urls.first)
        let redirectURI = try #require(Self.parameter("redirect_uri", in: authorizeURL).first)
        #expect(redirectURI.hasPrefix("http://127.0.0.1:") && redirectURI.hasSuffix("/callback"), "\(redirectURI)")
        #expect(try Self.answer(result).string("resource") == a.resource)
    }

    @Test func theSecondCallToTheResourceNeedsNoDiscoveryRegistrationOrSignIn() async throws {
        let provider = try Provider.main()
        let resources = try ProtectedResources.main()
        // On localhost, so that the provider's log tells this test's metadata
        // requests from those of suites running beside it (on 127.0.0.1).
        let hello = try Self.onLocalhost(try resources.resource("b").hello)
        let resource = try Self.onLocalhost(try resources.resource("b").resource)
        let cli = try Self.cli()

        let first = try await Self.call(hello, cli, provider, signIns: 1)
        #expect(first.result.status == 0, "\(first.result.stderr)")
        let name = try Self.providerName(resources.issuer)
        let clientID = try #require((try await Self.show(name, cli).0["settings"] as? [String: Any])?["client_id"] as? String)
        let metadataRequests = try await resources.discoveryRequests().filter { $0.url.contains("://localhost:") }
        #expect(!metadataRequests.isEmpty, "the first call fetched the resource's metadata on localhost")
        let tokenRequests = try await resources.tokenRequests(clientID: clientID).count

        let second = try await cli.run(["call", hello], input: "")
        #expect(second.status == 0, "\(second.stderr)")
        // No authorize URL: the answer is all of stdout.
        #expect(try JSONObject(second.stdout.trimmingCharacters(in: .whitespacesAndNewlines)).string("resource") == resource)
        #expect(try await resources.discoveryRequests().filter { $0.url.contains("://localhost:") } == metadataRequests)
        #expect(try await resources.tokenRequests(clientID: clientID).count == tokenRequests)
        let settings = try #require(try await Self.show(name, cli).0["settings"] as? [String: Any])
        #expect(settings["client_id"] as? String == clientID, "no second registration")
    }

    @Test func twoResourcesBehindOneServerGetTwoTokensEachRefusedByTheOther() async throws {
        let provider = try Provider.main()
        let resources = try ProtectedResources.main()
        let a = try resources.resource("a")
        let b = try resources.resource("b")
        let cli = try Self.cli()

        let toA = try await Self.call(a.hello, cli, provider, signIns: 1)
        #expect(toA.result.status == 0, "\(toA.result.stderr)")
        // Another resource: another sign-in, with the same registration.
        let toB = try await Self.call(b.hello, cli, provider, signIns: 1)
        #expect(toB.result.status == 0, "\(toB.result.stderr)")
        let authorizeURLForB = try #require(toB.authorizeURLs.first)
        #expect(Self.parameter("resource", in: authorizeURLForB) == [b.resource])
        let answerA = try Self.answer(toA.result)
        let answerB = try Self.answer(toB.result)
        #expect((answerA["audience"] as? [String]) == [a.resource])
        #expect((answerB["audience"] as? [String]) == [b.resource])
        #expect(answerA.string("client_id") == answerB.string("client_id"))

        let (shown, _) = try await Self.show(try Self.providerName(resources.issuer), cli)
        #expect((shown["settings"] as? [String: Any])?["resources"] as? [String] == [a.resource, b.resource])

        // Each token is its resource's: the other refuses it (shown with the token sent by hand).
        let tokens = try Self.storedTokens(cli)
        #expect(tokens.count == 2, "\(tokens.count) tokens stored")
        var accepted: [String] = []
        for token in tokens {
            let atA = try await Self.status(of: a.hello, with: token)
            let atB = try await Self.status(of: b.hello, with: token)
            #expect(Set([atA, atB]) == [200, 401], "a token answered \(atA) at a, \(atB) at b")
            accepted.append(atA == 200 ? "a" : "b")
        }
        #expect(accepted.sorted() == ["a", "b"])
        // And again through the CLI: both resources answer without a sign-in.
        let again = try await cli.run(["call", a.hello], input: "")
        #expect(again.status == 0, "\(again.stderr)")
    }

    @Test func insufficientScopeStepsUpThroughTheListenerByItself() async throws {
        let provider = try Provider.main()
        let resources = try ProtectedResources.main()
        let a = try resources.resource("a")
        let cli = try Self.cli()

        let (result, urls) = try await Self.call(a.admin, cli, provider, signIns: 2, arguments: ["--listen"])
        #expect(result.status == 0, "\(result.stderr)")
        let stepUpScopes = Set(Self.parameter("scope", in: urls[1]).first?.split(separator: " ").map(String.init) ?? [])
        #expect(stepUpScopes.isSuperset(of: ["read", "admin"]), "\(urls[1])")
        #expect(try Self.answer(result).string("endpoint") == "admin")
    }

    @Test func insufficientScopeWithAPastedRedirectPrintsTheNewAuthorizeURLTheSameWay() async throws {
        let provider = try Provider.main()
        let resources = try ProtectedResources.main()
        let a = try resources.resource("a")
        let cli = try Self.cli()

        let (result, urls) = try await Self.call(a.admin, cli, provider, signIns: 2)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(urls.allSatisfy { $0.hasPrefix(resources.issuer) }, "\(urls)")
        #expect(Self.parameter("scope", in: urls[1]).first?.contains("admin") == true)
        #expect(try Self.answer(result).string("endpoint") == "admin")
    }

    @Test func aResourceAskingForScopeOnEveryRetryGetsOneStepUpThenATypedError() async throws {
        let provider = try Provider.main()
        let resources = try ProtectedResources.main()
        let a = try resources.resource("a")
        let cli = try Self.cli()

        let (result, urls) = try await Self.call(a.insufficientAlways, cli, provider, signIns: 2)
        #expect(urls.count == 2)
        #expect(result.status == 1)
        #expect(result.errorLines.first?.hasPrefix("error: insufficient_scope: ") == true, "\(result.stderr)")
        #expect(result.stdout.split(separator: "\n").count == 2, "no third authorize URL: \(result.stdout)")
    }

    @Test func withoutStepUpInsufficientScopeIsATypedError() async throws {
        let provider = try Provider.main()
        let resources = try ProtectedResources.main()
        let a = try resources.resource("a")
        let cli = try Self.cli()

        let (result, _) = try await Self.call(a.admin, cli, provider, signIns: 1, arguments: ["--no-step-up"])
        #expect(result.status == 1)
        #expect(result.errorLines.first?.hasPrefix("error: insufficient_scope: ") == true, "\(result.stderr)")
    }

    @Test func aClientMetadataDocumentIsTheClientID() async throws {
        let provider = try Provider.main()
        let resources = try ProtectedResources.main()
        let a = try resources.resource("a")
        let cli = try Self.cli()
        let server = try await Self.cliMetadataDocument(trustedBy: resources)

        let (result, urls) = try await Self.call(
            a.hello, cli, provider, signIns: 1, arguments: ["--client-metadata-url", server.url()])
        #expect(result.status == 0, "\(result.stderr)")
        let authorizeURL = try #require(urls.first)
        #expect(Self.parameter("client_id", in: authorizeURL) == [server.url()])
        #expect(try Self.answer(result).string("client_id") == server.url())
        let (shown, text) = try await Self.show(try Self.providerName(resources.issuer), cli)
        let settings = try #require(shown["settings"] as? [String: Any])
        #expect(settings["client_metadata_url"] as? String == server.url())
        #expect(settings["client_id"] as? String == server.url())
        #expect(!text.contains("\"registration\""))
        await server.stop()
    }

    /// Every token in the CLI's store (plaintext, as the tests keep it), whatever account it is under.
    static func storedTokens(_ cli: CLI) throws -> [AccessToken] {
        try FileManager.default.contentsOfDirectory(atPath: cli.store).filter { $0.hasSuffix(".token") }.map { name in
            let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: cli.store + "/" + name)))
            let account = String(name.dropLast(6)).removingPercentEncoding ?? ""
            return try TokenFileFormat.decode(bytes, account: account, encryption: .plaintext, subject: name)
        }
    }

    /// `url` with its host 127.0.0.1 replaced by localhost.
    static func onLocalhost(_ url: String) throws -> String {
        var components = try #require(URLComponents(string: url))
        components.host = "localhost"
        return try #require(components.string)
    }

    /// The status `url` answers a request signed with `token` by hand.
    static func status(of url: String, with token: AccessToken) async throws -> Int {
        var request = HTTPTransportRequest(url: try #require(URL(string: url)))
        request.headers.append(HTTPField(name: .authorization, value: "Bearer " + token.accessToken.value))
        return try await Provider.send(request).status.code
    }
}

/// The checks `oauth2 call` makes before it sends anything; no provider needed.
@Suite struct CallDiscoveryUsageTests {
    @Test func aClientMetadataURLThatIsNotHTTPSIsAUsageError() async throws {
        let cli = try CallDiscoveryCommandTests.cli()
        let result = try await cli.run(["call", "https://mcp.example/mcp", "--client-metadata-url", "http://app.example/client.json"])
        #expect(result.status == 64)
        #expect(result.errorLines.first?.hasPrefix("error: usage: --client-metadata-url") == true, "\(result.stderr)")
    }

    @Test func registerWithoutAnIssuerIsAUsageError() async throws {
        let cli = try CallDiscoveryCommandTests.cli()
        let result = try await cli.run(["register"])
        #expect(result.status == 64)
        #expect(
            result.errorLines == [
                "error: usage: the authorization server is needed: --issuer (or OAUTH2_ISSUER), or --provider with an issuer"
            ])
    }

    @Test func showAndDeleteCannotBeCombined() async throws {
        let cli = try CallDiscoveryCommandTests.cli()
        let result = try await cli.run(["register", "--issuer", "https://id.example", "--show", "--delete"])
        #expect(result.status == 64)
        #expect(result.stderr.contains("--show and --delete cannot be combined"), "\(result.stderr)")
    }
}
