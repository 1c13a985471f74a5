import Foundation
import OAuth2
import Testing

/// The CLI's `microsoft` and `google` presets against the test provider that
/// behaves as Microsoft Entra ID and Google are documented to
/// (Tests/EntraProvider/serve.py; the pages followed are named in
/// EntraAndGoogleTests). The presets keep their issuer rules (the
/// `{tenantid}` template and `tid`; Google's other spelling) and are pointed at
/// the local provider with the flags that win over a preset: `--issuer`,
/// `--authorize-url`, `--token-url` (and `--issuer-alias` for Google, whose
/// scheme-less spelling here is the local issuer's, not accounts.google.com).
@Suite(.enabled(if: EntraProvider.isConfigured, "needs the Entra/Google test provider: `make test` starts it and sets OAUTH2_IT_ENTRA"))
struct EntraAndGoogleCommandLineTests {
    static func microsoftOptions(_ local: EntraProvider, cli: CLI, tenant: String = "common") throws -> [String] {
        let secret = try cli.writeFile("secret", local.clientSecret + "\n")
        return [
            "--provider", "microsoft", "--tenant", tenant, "--client-id", local.clientID, "--client-secret-file", secret,
            "--issuer", "\(local.base)/\(tenant)/v2.0",
            "--authorize-url", "\(local.base)/\(tenant)/oauth2/v2.0/authorize",
            "--token-url", "\(local.base)/\(tenant)/oauth2/v2.0/token",
            "--device-url", "\(local.base)/\(tenant)/oauth2/v2.0/devicecode",
        ]
    }

    static func googleOptions(_ local: EntraProvider, cli: CLI) throws -> [String] {
        let secret = try cli.writeFile("secret", local.clientSecret + "\n")
        return [
            "--provider", "google", "--client-id", local.clientID, "--client-secret-file", secret,
            "--issuer", local.googleIssuer, "--authorize-url", "\(local.googleIssuer)/auth", "--token-url", "\(local.googleIssuer)/token",
            "--revoke-url", "\(local.googleIssuer)/revoke",
        ]
    }

    /// `oauth2 authorize` as a person runs it: the URL, the provider's redirect for `login`, pasted.
    static func authorize(_ local: EntraProvider, cli: CLI, options: [String], login: String) async throws -> Subprocess.Result {
        let command = try cli.start(["authorize", "--store", cli.store, "--param", "login_hint=\(login)"] + options)
        let url = try #require(URL(string: try await command.firstLineOfStdout()))
        let transport = CurlTransport()
        defer { Task { await transport.shutdown() } }
        command.write(try await local.browse(url, transport: transport) + "\n")
        command.closeInput()
        return try await command.wait()
    }

    @Test func theMicrosoftPresetVerifiesIDTokensOfEveryTenant() async throws {
        let local = try EntraProvider.load()
        for (login, tenant) in [("alice@contoso.example", "contoso"), ("carol@outlook.example", "consumers")] {
            let cli = try CLI()
            let result = try await Self.authorize(local, cli: cli, options: try Self.microsoftOptions(local, cli: cli), login: login)
            #expect(result.status == 0, "\(result.stderr)")
            let stored = try #require(try await cli.storedToken(account: "microsoft"))
            let idToken = try #require(stored.idToken, "the ID token was verified and kept")
            #expect(idToken.issuer == local.tenantIssuer(tenant))
            #expect(idToken.tenantID == local.tenant(tenant))
        }
    }

    @Test func allowedTenantRefusesTheOthersAndAWrongTidIsRefused() async throws {
        let local = try EntraProvider.load()
        let cli = try CLI()
        let options = try Self.microsoftOptions(local, cli: cli) + ["--allowed-tenant", local.tenant("contoso")]
        let alice = try await Self.authorize(local, cli: cli, options: options, login: "alice@contoso.example")
        #expect(alice.status == 0, "\(alice.stderr)")
        let bob = try await Self.authorize(local, cli: try CLI(), options: options, login: "bob@fabrikam.example")
        #expect(bob.status == 1)
        #expect(bob.errorLines.first?.hasPrefix("error: issuer_mismatch:") == true, "\(bob.stderr)")
        let mallory = try await Self.authorize(
            local, cli: try CLI(), options: try Self.microsoftOptions(local, cli: cli), login: "mallory@contoso.example")
        #expect(mallory.status == 1)
        #expect(mallory.errorLines.first?.hasPrefix("error: issuer_mismatch:") == true, "\(mallory.stderr)")
        let notAGUID = try await cli.run(["authorize", "--print-url"] + options + ["--allowed-tenant", "contoso"])
        #expect(notAGUID.status == 64)
    }

    @Test func theGooglePresetAcceptsBothSpellingsAndTheHostedDomain() async throws {
        let local = try EntraProvider.load()
        // The client secret's file lives as long as this CLI value; each sign-in gets a store of its own.
        let files = try CLI()
        let options = try Self.googleOptions(local, cli: files)
        let aliased = options + ["--issuer-alias", local.googleIssuerBare]
        let ben = try CLI()
        let benResult = try await Self.authorize(local, cli: ben, options: aliased, login: "ben@gmail.example")
        #expect(benResult.status == 0, "\(benResult.stderr)")
        #expect(try await ben.storedToken(account: "google")?.idToken?.issuer == local.googleIssuerBare)
        let zed = try await Self.authorize(local, cli: try CLI(), options: aliased, login: "zed@example.com")
        #expect(zed.status == 1)
        #expect(zed.errorLines.first?.hasPrefix("error: issuer_mismatch:") == true, "\(zed.stderr)")
        // The preset's own alias is accounts.google.com: this provider's scheme-less spelling is not it.
        let plain = try await Self.authorize(local, cli: try CLI(), options: options, login: "ben@gmail.example")
        #expect(plain.status == 1)
        #expect(plain.errorLines.first?.hasPrefix("error: issuer_mismatch:") == true, "\(plain.stderr)")
        let domain = try await Self.authorize(
            local, cli: try CLI(), options: aliased + ["--hosted-domain", "example.com"], login: "ben@gmail.example")
        #expect(domain.status == 1)
        #expect(domain.errorLines.first?.hasPrefix("error: hosted_domain_mismatch:") == true, "\(domain.stderr)")
        let ann = try CLI()
        let annResult = try await Self.authorize(
            local, cli: ann, options: options + ["--hosted-domain", "example.com"], login: "ann@example.com")
        #expect(annResult.status == 0, "\(annResult.stderr)")
        #expect(try await ann.storedToken(account: "google")?.idToken?.hostedDomain == "example.com")
    }
}
