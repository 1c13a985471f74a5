import Foundation
import OAuth2
import Testing

/// The deployment: eight CLI processes refreshing one DPoP-bound
/// grant of a public client at once, against glewlwyd, which binds a public
/// client's refresh token to the key (a refresh without the proof, or with
/// another key, is refused) and rotates refresh tokens with reuse
/// protection: a rotated-out refresh token presented again kills the whole
/// chain (Tests/Glewlwyd/README.md: eight refreshes at once with one token
/// leave the grant dead). Its `oidcshort` instance gives 5-second access
/// tokens, so every burst starts on an expired token; the library uses one
/// for the first half of its life, so a process that starts up to 2.5 s
/// after the one that refreshed uses the new token.
///
/// What the other side recorded is the proof: every call answered 200 by the
/// independent resource server with a proof of the one key, and the grant
/// alive after three bursts (glewlwyd would have killed it at the first
/// refresh token spent twice); the processes' own debug lines say how many
/// refreshed (one per burst).
@Suite(.serialized, .enabled(if: GlewlwydRun.isConfigured, "needs glewlwyd: `make test` starts it and sets OAUTH2_IT_GLEWLWYD"))
struct GlewlwydDPoPDeploymentTests {
    @Test func eightProcessesOnOneFileStoreRefreshADPoPBoundGrantOncePerBurst() async throws {
        try await Self.expectBurstsRefreshOnceWithOneKey(cli: try CLI())
    }

    @Test(.enabled(if: Database.isConfigured, "needs PostgreSQL: `make test` starts it and sets OAUTH2_IT_POSTGRES_URL"))
    func eightProcessesOnOneDatabaseRefreshADPoPBoundGrantOncePerBurst() async throws {
        try await Self.expectBurstsRefreshOnceWithOneKey(cli: try CLI(database: try Database.main()))
    }

    static func expectBurstsRefreshOnceWithOneKey(cli: CLI, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let (run, path) = try GlewlwydRun.plain()
        let env = try JSONObject(String(decoding: try Data(contentsOf: URL(fileURLWithPath: path)), as: UTF8.self))
        let plugins = try #require(env["plugins"] as? [String: Any])
        let short = try #require(plugins["oidcshort"] as? [String: Any])
        let issuer = try #require(short["issuer"] as? String)
        // The token endpoint given too: a command that only reads a PostgreSQL store discovers nothing.
        let tokenURL = try #require(short["token"] as? String)
        let resource = try #require(env["resource"] as? [String: Any])
        let requestLog = try #require(resource["requests"] as? String)
        let me = try #require(resource["me"] as? String)
        let client = try run.client("public")
        let redirectURI = try #require(run.redirectURIs.first)
        var options = [
            "--issuer", issuer, "--token-url", tokenURL, "--client-id", client.clientID, "--store", cli.store, "--scope", "openid api",
            "--redirect-uri", redirectURI,
        ]
        if let tls = run.tls { options += ["--ca-file", tls.ca] }

        let command = try cli.start(["authorize", "--dpop"] + options)
        let url = try await command.firstLineOfStdout()
        command.write(try await run.browse([url]) + "\n")
        command.closeInput()
        let signIn = try await command.wait()
        try #require(signIn.status == 0, "\(signIn.stderr)", sourceLocation: sourceLocation)
        let shown = try await cli.run(["token", "--format", "json"] + options)
        try #require(shown.status == 0, "\(shown.stderr)", sourceLocation: sourceLocation)
        let jkt = try #require((try JSONObject(shown.stdout)["binding"] as? [String: Any])?["jkt"] as? String, "\(shown.stdout)")

        for round in 1...3 {
            try await Task.sleep(for: .seconds(6))
            let before = try await GlewlwydCommandLineDPoPTests.proofs(of: jkt, for: me, in: requestLog).count

            let results = try await DeploymentTests.runTogether(8, cli, ["call", me, "--verbose"] + options)

            for result in results {
                #expect(result.status == 0, "round \(round): \(result.stderr)", sourceLocation: sourceLocation)
            }
            let refreshes = results.filter { $0.stderr.contains("token refreshed") }.count
            #expect(refreshes == 1, "round \(round): \(refreshes) processes refreshed", sourceLocation: sourceLocation)
            let proofs = try await GlewlwydCommandLineDPoPTests.proofs(of: jkt, for: me, in: requestLog).dropFirst(before)
            #expect(proofs.filter { $0["status"] as? Int == 200 }.count == 8, "round \(round): \(proofs)", sourceLocation: sourceLocation)
        }
        // The grant is alive: one more refresh, with the same key.
        let refresh = try await cli.run(["refresh"] + options)
        #expect(refresh.status == 0, "the grant is alive: \(refresh.stderr)", sourceLocation: sourceLocation)
        let after = try await cli.run(["token", "--format", "json"] + options)
        #expect((try JSONObject(after.stdout)["binding"] as? [String: Any])?["jkt"] as? String == jkt, sourceLocation: sourceLocation)
    }
}
