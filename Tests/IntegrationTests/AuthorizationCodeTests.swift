import Foundation
import Testing

/// `oauth2 authorize` against the provider, pasting the redirect as a person does.
@Suite(.enabled(if: Provider.mainIsConfigured, "needs the local provider: `make test` starts it and sets OAUTH2_IT_PROVIDER"))
struct AuthorizationCodeTests {
    @Test func confidentialClientWithClientSecretBasicSignsAliceIn() async throws {
        let provider = try Provider.main()
        let cli = try CLI()
        let options = try provider.options(client: "confidential", for: cli) + ["--auth-method", "basic"]
        let (result, url, _) = try await provider.authorize(with: cli, options: options)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(url.hasPrefix(provider.endpoints.authorize + "?"))
        #expect(url.contains("code_challenge_method=S256"))
        try await expectCallReturnsAlice(provider, cli, options)
    }

    @Test func confidentialClientWithClientSecretPostSignsAliceIn() async throws {
        let provider = try Provider.main()
        let cli = try CLI()
        let options = try provider.options(client: "confidential", for: cli, secret: .environment) + ["--auth-method", "post"]
        let (result, _, _) = try await provider.authorize(with: cli, options: options)
        #expect(result.status == 0, "\(result.stderr)")
        try await expectCallReturnsAlice(provider, cli, options)
    }

    @Test func publicClientSignsAliceInWithPKCEAlone() async throws {
        let provider = try Provider.main()
        let cli = try CLI()
        let options = try provider.options(client: "public", for: cli)
        #expect(!options.contains("--client-secret-file"))
        let (result, _, _) = try await provider.authorize(with: cli, options: options)
        #expect(result.status == 0, "\(result.stderr)")
        try await expectCallReturnsAlice(provider, cli, options)
    }

    @Test func theAuthorizeURLIsTheFirstLineOfStdoutAndNothingElseIsPrinted() async throws {
        let provider = try Provider.main()
        let cli = try CLI()
        let options = try provider.options(client: "public", for: cli)
        let (result, url, _) = try await provider.authorize(with: cli, options: options)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout == url + "\n")
        #expect(result.stderr.contains("Paste the redirect URL: "))
    }

    @Test func issuerDiscoveryFillsTheEndpointsAndChecksIss() async throws {
        let provider = try Provider.main()
        let cli = try CLI()
        let options = try provider.options(client: "confidential", for: cli, endpoints: false) + ["--issuer", provider.issuer]
        let (result, url, redirect) = try await provider.authorize(with: cli, options: options)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(url.hasPrefix(provider.endpoints.authorize + "?"))
        #expect(redirect.contains("iss="))
        try await expectCallReturnsAlice(provider, cli, options)
    }

    @Test func aRedirectWithoutIssIsRefusedWhenTheMetadataPromisesIt() async throws {
        let provider = try Provider.main()
        let cli = try CLI()
        let options = try provider.options(client: "confidential", for: cli, endpoints: false) + ["--issuer", provider.issuer]
        let (result, _, _) = try await provider.authorize(with: cli, options: options) { redirect in
            redirect.replacingOccurrences(of: #"[?&]iss=[^&]*"#, with: "", options: .regularExpression)
        }
        #expect(result.status == 1)
        #expect(result.errorLines.first?.hasPrefix("error: missing_issuer: ") == true, "\(result.stderr)")
    }

    @Test func aReplayedRedirectIsAStateMismatch() async throws {
        let provider = try Provider.main()
        let cli = try CLI()
        let options = try provider.options(client: "public", for: cli)
        let first = try await provider.authorize(with: cli, options: options)
        #expect(first.result.status == 0, "\(first.result.stderr)")
        let second = try await provider.authorize(with: cli, options: options) { _ in first.redirect }
        #expect(second.result.status == 1)
        #expect(second.result.errorLines.first?.hasPrefix("error: state_mismatch: ") == true, "\(second.result.stderr)")
    }

    @Test func aRedirectWithAnotherStateIsAStateMismatch() async throws {
        let provider = try Provider.main()
        let cli = try CLI()
        let options = try provider.options(client: "public", for: cli)
        let (result, _, _) = try await provider.authorize(with: cli, options: options) { redirect in
            redirect.replacingOccurrences(of: #"state=[^&]*"#, with: "state=forged", options: .regularExpression)
        }
        #expect(result.status == 1)
        #expect(result.errorLines.first?.hasPrefix("error: state_mismatch: ") == true, "\(result.stderr)")
        #expect(try await cli.storedToken() == nil)
    }

    @Test func theUserDenyingConsentIsAccessDenied() async throws {
        let provider = try Provider.main()
        let cli = try CLI()
        // No --issuer: DOT leaves iss out of error redirects.
        let options = try provider.options(client: "confidential", for: cli)
        let (result, _, redirect) = try await provider.authorize(with: cli, options: options, deny: true)
        #expect(redirect.contains("error=access_denied"))
        #expect(result.status == 1)
        #expect(result.errorLines.first?.hasPrefix("error: access_denied: ") == true, "\(result.stderr)")
    }
}

/// `oauth2 call` on `/api/me` answers alice's username.
func expectCallReturnsAlice(_ provider: Provider, _ cli: CLI, _ options: [String], sourceLocation: SourceLocation = #_sourceLocation)
    async throws
{
    let me = try await cli.run(["call", provider.endpoints.apiMe] + options)
    #expect(me.status == 0, "\(me.stderr)", sourceLocation: sourceLocation)
    #expect(try JSONObject(me.stdout).string("username") == "alice", sourceLocation: sourceLocation)
}
