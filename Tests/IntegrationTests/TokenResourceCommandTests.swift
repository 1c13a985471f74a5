import Foundation
import OAuth2
import Testing

/// `oauth2 token` for the tokens `oauth2 call URL` got by itself, which are
/// kept per resource: a script (or kubectl) gets the token the resource
/// accepted, refreshed when it has expired, without a sign-in.
@Suite(.enabled(if: Provider.mainIsConfigured, "needs the local provider: `make test` starts it and sets OAUTH2_IT_PROVIDER"))
struct TokenResourceCommandTests {
    typealias Call = CallDiscoveryCommandTests

    /// `oauth2 token arguments… --print-access-token`, which must succeed with one line.
    static func printedToken(_ arguments: [String], _ cli: CLI) async throws -> String {
        let result = try await cli.run(["token"] + arguments + ["--print-access-token"], input: "")
        #expect(result.status == 0, "\(result.stderr)")
        let lines = result.stdout.split(separator: "\n")
        #expect(lines.count == 1, "only the access token on stdout: \(result.stdout.count) characters")
        return String(try #require(lines.first))
    }

    /// The account key `oauth2 call` keeps the resource's token under.
    static func account(_ resources: ProtectedResources, _ resource: ProtectedResources.Resource) -> String {
        ProtectedResourceClient.tokenAccount(authorizationServer: resources.issuer, resource: resource.resource, account: "default")
    }

    /// What each test starts from: `oauth2 call` signed in for resource `a`
    /// by itself (one sign-in), with a CLI of its own.
    struct SignedIn {
        let provider: Provider
        let resources: ProtectedResources
        let a: ProtectedResources.Resource
        let cli: CLI
        let call: (result: Subprocess.Result, authorizeURLs: [String])
    }

    static func signedIn(callArguments: [String] = []) async throws -> SignedIn {
        let provider = try Provider.main()
        let resources = try ProtectedResources.main()
        let a = try resources.resource("a")
        let cli = try Call.cli()
        let call = try await Call.call(a.hello, cli, provider, signIns: 1, arguments: callArguments)
        #expect(call.result.status == 0, "\(call.result.stderr)")
        return SignedIn(provider: provider, resources: resources, a: a, cli: cli, call: call)
    }

    @Test func tokenPrintsTheTokenTheCallGotByResourceOrByItsOnlyProvider() async throws {
        let start = try await Self.signedIn()
        let (resources, a, cli) = (start.resources, start.a, start.cli)
        let stored = try #require(try await cli.storedToken(account: Self.account(resources, a)))

        let byURL = try await Self.printedToken(["--resource", a.hello], cli)
        let byResource = try await Self.printedToken(["--resource", a.resource], cli)
        let byProvider = try await Self.printedToken(["--provider", try Call.providerName(resources.issuer)], cli)
        #expect(byURL == stored.accessToken.value)
        #expect(byResource == byURL && byProvider == byURL)
        #expect(try await Call.status(of: a.hello, with: stored) == 200, "the resource takes the printed token")

        // Its metadata too, never the token.
        let json = try await cli.run(["token", "--resource", a.hello, "--format", "json"])
        #expect(json.status == 0, "\(json.stderr)")
        #expect(!json.stdout.contains(byURL))
        #expect(try JSONObject(json.stdout)["has_refresh_token"] as? Bool == true)
    }

    @Test func anExpiredTokenIsRefreshedOnceAndTheResourceTakesTheNewOne() async throws {
        let start = try await Self.signedIn()
        let (provider, resources, a, cli, call) = (start.provider, start.resources, start.a, start.cli, start.call)
        let clientID = try #require(try Call.answer(call.result).string("client_id"))
        func refreshes() async throws -> Int {
            try await resources.tokenRequests(clientID: clientID).filter { $0.grantType == "refresh_token" && $0.status == 200 }.count
        }
        let old = try await cli.expireStoredToken(account: Self.account(resources, a), at: provider)
        #expect(try await refreshes() == 0)

        let printed = try await Self.printedToken(["--resource", a.hello], cli)
        #expect(printed != old.accessToken.value)
        #expect(try await refreshes() == 1)
        let renewed = try #require(try await cli.storedToken(account: Self.account(resources, a)))
        #expect(renewed.accessToken.value == printed)
        #expect(renewed.refreshToken != nil && renewed.refreshToken != old.refreshToken, "the rotated refresh token is kept")
        #expect(try await Call.status(of: a.hello, with: renewed) == 200)
        // The refresh asked for the resource's token again (RFC 8707).
        #expect(try await resources.tokenRequests(clientID: clientID).last?.resource == [a.resource])

        // A valid token is printed as it is.
        #expect(try await Self.printedToken(["--resource", a.hello], cli) == printed)
        #expect(try await refreshes() == 1)
    }

    @Test func aCallThatIdentifiedWithAMetadataDocumentIsFoundByTheResourceAlone() async throws {
        let server = try await Call.cliMetadataDocument(trustedBy: try ProtectedResources.main())
        let start = try await Self.signedIn(callArguments: ["--client-metadata-url", server.url()])
        let (provider, resources, a, cli) = (start.provider, start.resources, start.a, start.cli)
        let old = try await cli.expireStoredToken(account: Self.account(resources, a), at: provider)

        // No --provider, no --client-metadata-url: the saved provider says how the call identified itself.
        let printed = try await Self.printedToken(["--resource", a.hello], cli)
        #expect(printed != old.accessToken.value)
        let refreshes = try await resources.tokenRequests(clientID: server.url()).filter { $0.grantType == "refresh_token" }
        #expect(refreshes.map(\.status) == [200], "refreshed as the metadata document's client")
        let (shown, text) = try await Call.show(try Call.providerName(resources.issuer), cli)
        #expect((shown["settings"] as? [String: Any])?["client_id"] as? String == server.url())
        #expect(!text.contains("\"registration\""), "no client registered")
        await server.stop()
    }

    @Test func aResourceDiscoveredLongerAgoThanTheCacheLifetimeStillGivesItsToken() async throws {
        let start = try await Self.signedIn()
        let (resources, a, cli) = (start.resources, start.a, start.cli)
        // Two hours ago: past the one hour after which oauth2 call discovers again.
        let store = try FileTokenStore(directory: cli.store)
        for key in [a.hello, a.resource] {
            let url = try #require(URL(string: key))
            var record = try #require(try await store.loadDiscoveredResource(url))
            record.fetchedAt = Date().addingTimeInterval(-7200)
            try await store.saveDiscoveredResource(record)
        }
        let stored = try #require(try await cli.storedToken(account: Self.account(resources, a)))
        #expect(try await Self.printedToken(["--resource", a.hello], cli) == stored.accessToken.value)
    }

    @Test func aProviderWithSeveralResourcesNeedsTheResource() async throws {
        let provider = try Provider.main()
        let resources = try ProtectedResources.main()
        let a = try resources.resource("a")
        let b = try resources.resource("b")
        let cli = try Call.cli()
        for url in [a.hello, b.hello] {
            let call = try await Call.call(url, cli, provider, signIns: 1)
            #expect(call.result.status == 0, "\(call.result.stderr)")
        }
        let name = try Call.providerName(resources.issuer)

        let ambiguous = try await cli.run(["token", "--provider", name, "--print-access-token"], input: "")
        #expect(ambiguous.status == 64)
        #expect(ambiguous.stdout.isEmpty)
        let message = try #require(ambiguous.errorLines.first)
        #expect(message.hasPrefix("error: usage: the provider \(name) keeps tokens for several resources"), "\(message)")
        #expect(message.contains(a.resource) && message.contains(b.resource) && message.contains("--resource"), "\(message)")

        let forB = try await Self.printedToken(["--provider", name, "--resource", b.hello], cli)
        #expect(forB == (try await cli.storedToken(account: Self.account(resources, b)))?.accessToken.value)
        let token = AccessToken(accessToken: Secret(forB))
        #expect(try await Call.status(of: b.hello, with: token) == 200)
        #expect(try await Call.status(of: a.hello, with: token) == 401)
    }
}

/// `oauth2 token --resource` with nothing saved; no provider needed.
@Suite struct TokenResourceUsageTests {
    @Test func aResourceNoCallSignedInForHasNoToken() async throws {
        let cli = try CallDiscoveryCommandTests.cli()
        let result = try await cli.run(["token", "--resource", "https://mcp.example/mcp", "--print-access-token"], input: "")
        #expect(result.status == 1)
        #expect(result.stdout.isEmpty)
        #expect(
            result.errorLines.first?.hasPrefix("error: not_authenticated: no saved provider has a resource for https://mcp.example/mcp")
                == true,
            "\(result.stderr)")
    }

    @Test func oneTokenAtATime() async throws {
        let cli = try CallDiscoveryCommandTests.cli()
        let result = try await cli.run(["token", "--resource", "https://a.example/", "--resource", "https://b.example/"], input: "")
        #expect(result.status == 64, "\(result.stderr)")
    }
}
