import Foundation
import OAuth2
import Testing

/// The CLI's `apple` preset against the provider that behaves as Sign in with
/// Apple documents (Tests/AppleProvider): `--team-id`, `--key-id`,
/// `--key-file`, the posted form body pasted, refresh and revoke with the
/// signed client secret ("Sign in with Apple REST API", "Generate and validate
/// tokens", "Revoke tokens").
@Suite(
    .enabled(if: AppleProvider.isConfigured, "needs the Apple-behaving provider: `make test` starts it and sets OAUTH2_IT_APPLE_PROVIDER"))
struct AppleCommandLineTests {
    /// The preset, pointed at the test server (whose endpoints win over the preset's).
    static func options(_ apple: AppleProvider, cli: CLI, keyFile: String? = nil) -> [String] {
        [
            "--provider", "apple", "--client-id", apple.clientID, "--team-id", apple.teamID, "--key-id", apple.keyID,
            "--key-file", keyFile ?? apple.keyFile, "--issuer", apple.issuer, "--authorize-url", apple.endpoints.authorize,
            "--token-url", apple.endpoints.token, "--revoke-url", apple.endpoints.revoke, "--redirect-uri", apple.redirectURI,
            "--store", cli.store,
        ]
    }

    @Test func authorizeWithAPastedFormBodyThenRefreshAndRevoke() async throws {
        let apple = try AppleProvider.strings()
        let cli = try CLI()
        let transport = CurlTransport()
        defer { Task { await transport.shutdown() } }
        let options = Self.options(apple, cli: cli)
        let command = try cli.start(["authorize"] + options + ["--param", "test_user=cli-\(UUID().uuidString)"])
        let url = try await command.firstLineOfStdout()
        #expect(url.contains("response_mode=form_post"))
        let (_, body) = try await apple.browse(try #require(URL(string: url)), transport: transport)
        command.write(body + "\n")
        command.closeInput()
        let authorized = try await command.wait()
        #expect(authorized.status == 0, "\(authorized.stderr)")

        let refreshed = try await cli.run(["refresh"] + options)
        #expect(refreshed.status == 0, "\(refreshed.stderr)")
        let revoked = try await cli.run(["revoke"] + options)
        #expect(revoked.status == 0, "\(revoked.stderr)")
        let after = try await cli.run(["refresh"] + options)
        #expect(after.status == 1)
        #expect(after.stderr.contains("not_authenticated"))
    }

    @Test func aKeyFileOthersCanReadIsRefused() async throws {
        let apple = try AppleProvider.strings()
        let cli = try CLI()
        let copy = try cli.writeFile("AuthKey.p8", try apple.privateKeyPEM())
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: copy)
        let result = try await cli.run(["refresh"] + Self.options(apple, cli: cli, keyFile: copy))
        #expect(result.status == 1)
        #expect(result.stderr.contains("invalid_configuration"))
        #expect(!result.stderr.contains("PRIVATE KEY"))
    }

    @Test func theThreeOptionsGoTogether() async throws {
        let apple = try AppleProvider.strings()
        let cli = try CLI()
        let result = try await cli.run(
            ["refresh", "--provider", "apple", "--client-id", apple.clientID, "--team-id", apple.teamID, "--store", cli.store])
        #expect(result.status == 64)
        #expect(result.stderr.contains("--key-file"))
    }
}
