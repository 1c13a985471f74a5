import Foundation
import Testing

/// The grants without a browser redirect: password, client credentials, device.
@Suite(.enabled(if: Provider.mainIsConfigured, "needs the local provider: `make test` starts it and sets OAUTH2_IT_PROVIDER"))
struct GrantTests {
    @Test func passwordFromStdinSignsAliceIn() async throws {
        let provider = try Provider.main()
        let cli = try CLI()
        let options = try provider.options(client: "password", for: cli)
        let result = try await cli.run(
            ["password", "--username", "alice", "--password-stdin"] + options,
            input: try provider.password(of: "alice") + "\n"
        )
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.isEmpty)
        try await expectCallReturnsAlice(provider, cli, options)
    }

    @Test func callFollowsASameOrigin307WithItsMethodBodyAndToken() async throws {
        let provider = try Provider.main()
        let cli = try CLI()
        let options = try provider.options(client: "password", for: cli)
        let signIn = try await cli.run(
            ["password", "--username", "alice", "--password-stdin"] + options, input: try provider.password(of: "alice") + "\n")
        #expect(signIn.status == 0, "\(signIn.stderr)")
        let moved = try Self.redirect(provider, to: provider.endpoints.apiMe, status: 307)

        let followed = try await cli.run(["call", moved, "--data", "note=moved"] + options)

        #expect(followed.status == 0, "\(followed.stderr)")
        let body = try JSONObject(followed.stdout)
        #expect(body.string("username") == "alice")
        #expect(body.string("method") == "POST")
        #expect((body["form"] as? [String: Any])?["note"] as? String == "moved")

        let returned = try await cli.run(["call", moved, "--no-follow-redirects"] + options)

        #expect(returned.status == 0, "\(returned.stderr)")
        #expect(returned.stdout.isEmpty)
        #expect(returned.stderr.contains("note: HTTP 307 to \(provider.endpoints.apiMe), not followed"), "\(returned.stderr)")
    }

    /// The provider's `/test/redirect` URL answering `status` with `Location: target`.
    static func redirect(_ provider: Provider, to target: String, status: Int) throws -> String {
        let query = target.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
        return provider.endpoints.testRedirect + "?status=\(status)&to=" + query
    }

    @Test func aWrongPasswordIsTheProvidersInvalidGrant() async throws {
        let provider = try Provider.main()
        let cli = try CLI()
        let options = try provider.options(client: "password", for: cli)
        let result = try await cli.run(["password", "--username", "alice", "--password-stdin"] + options, input: "not-the-password\n")
        #expect(result.status == 1)
        #expect(result.errorLines.first?.hasPrefix("error: invalid_grant: ") == true, "\(result.stderr)")
        #expect(!result.stderr.contains("not-the-password"))
    }

    @Test func clientCredentialsGetATokenForTheService() async throws {
        let provider = try Provider.main()
        let cli = try CLI()
        let options = try provider.options(client: "service", for: cli)
        let result = try await cli.run(["client-credentials"] + options)
        #expect(result.status == 0, "\(result.stderr)")
        let me = try await cli.run(["call", provider.endpoints.apiMe] + options)
        #expect(me.status == 0, "\(me.stderr)")
        #expect(try JSONObject(me.stdout).string("client") == "service")
    }

    @Test func aClientWithReservedCharactersInIdAndSecretAuthenticates() async throws {
        let provider = try Provider.main()
        let cli = try CLI()
        let options = try provider.options(client: "reserved", for: cli, secret: .environment)
        let result = try await cli.run(["client-credentials"] + options)
        #expect(result.status == 0, "\(result.stderr)")
    }

    @Test func aWrongClientSecretIsTheProvidersInvalidClient() async throws {
        let provider = try Provider.main()
        let cli = try CLI()
        let options = try provider.options(client: "service", for: cli, secret: .environment)
        let result = try await cli.run(["client-credentials"] + options, environment: ["OAUTH2_CLIENT_SECRET": "wrong-secret"])
        #expect(result.status == 1)
        #expect(result.errorLines.first?.hasPrefix("error: invalid_client: ") == true, "\(result.stderr)")
    }

    @Test func theDeviceFlowShowsTheCodeAndPollsUntilApproved() async throws {
        let provider = try Provider.main()
        let cli = try CLI()
        let options = try provider.options(client: "device", for: cli)
        let command = try cli.start(["device"] + options)
        let userCode = try await command.stderrLine(startingWith: "and enter the code: ")
        let complete = try await command.stderrLine(startingWith: "Or open this address, which carries the code: ")
        #expect(complete.contains(userCode) || complete.contains(userCode.replacingOccurrences(of: "-", with: "")))
        try await provider.approveDevice(complete)
        let result = try await command.wait()
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("To sign in, open \(provider.endpoints.deviceVerification)"))
        try await expectCallReturnsAlice(provider, cli, options)
    }

    @Test func aLoopbackProviderIsReachedDirectlyWhenAProxyIsConfigured() async throws {
        let provider = try Provider.main()
        let cli = try CLI()
        let options = try provider.options(client: "service", for: cli)
        for name in ["no_proxy", "NO_PROXY"] { cli.environment.removeValue(forKey: name) }
        // Nothing listens on port 9: a request sent through this proxy fails.
        cli.environment["http_proxy"] = "http://127.0.0.1:9"
        let result = try await cli.run(["client-credentials"] + options)
        #expect(result.status == 0, "\(result.stderr)")
    }
}
