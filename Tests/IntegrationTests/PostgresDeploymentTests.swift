import Foundation
import Testing

/// The deployments of DeploymentTests with the token store in PostgreSQL:
/// several processes (app instances) on one database refresh once, a killed
/// lock holder strands nothing, and a database that goes away and comes back
/// costs clear errors while it is away and nothing after. In DeploymentTests,
/// so they are serialized with its other tests (the provider-wide delay).
extension DeploymentTests {
    @Test(.enabled(if: Database.isConfigured, "needs PostgreSQL: `make test` starts it and sets OAUTH2_IT_POSTGRES_URL"))
    func eightProcessesOnOneDatabaseRefreshOnceAndAllSucceedThreeTimesOver() async throws {
        try await Self.expectBurstsRefreshOnce(cli: try CLI(database: try Database.main()))
    }

    @Test(.enabled(if: Database.isConfigured, "needs PostgreSQL: `make test` starts it and sets OAUTH2_IT_POSTGRES_URL"))
    func aProcessKilledHoldingTheDatabaseLockLosesNothingWithAGracePeriod() async throws {
        let provider = try Provider.grace()
        let cli = try CLI(database: try Database.main())
        let options = try provider.options(client: "confidential", for: cli)
        let otherGrants = try await provider.liveRefreshTokens(client: "confidential")
        #expect(try await provider.authorize(with: cli, options: options).result.status == 0)
        try await Task.sleep(for: .seconds(3))

        // The victim holds the advisory lock on its connection; SIGKILL ends
        // the connection, and PostgreSQL lets the lock go.
        let started = ContinuousClock.now
        let (killed, results) = try await Self.burstWithTheLockHolderKilled(provider, cli, options)
        #expect(killed.status != 0)

        for result in results {
            #expect(result.status == 0, "\(result.stderr)")
        }
        #expect(ContinuousClock.now - started < .seconds(60), "the others went on within the timeout")
        let token = try await cli.run(["token", "--format", "json"] + options)
        #expect(token.status == 0, "\(token.stderr)")
        #expect((try? JSONObject(token.stdout))?.bool("has_refresh_token") == true)
        #expect(try await provider.liveRefreshTokens(client: "confidential") == otherGrants + 1)
        let after = try await cli.run(["call", provider.endpoints.apiMe] + options)
        #expect(after.status == 0, "\(after.stderr)")
    }

    @Test(.enabled(if: Database.isConfigured, "needs PostgreSQL: `make test` starts it and sets OAUTH2_IT_POSTGRES_URL"))
    func aDatabaseThatGoesAwayGivesStoreErrorsAndNothingIsLostWhenItComesBack() async throws {
        let provider = try Provider.main()
        let database = try await Database.start(name: "restart")
        do {
            let cli = try CLI(database: database)
            let options = try provider.options(client: "password", for: cli) + ["--timeout", "3"]
            let signIn = try await cli.run(
                ["password", "--username", "alice", "--password-stdin"] + options, input: try provider.password(of: "alice") + "\n")
            #expect(signIn.status == 0, "\(signIn.stderr)")

            // Requests running while the database restarts: each succeeds or
            // says store_error; none hangs, none fails otherwise.
            let arguments = ["call", provider.endpoints.apiMe] + options
            let environment = cli.environment
            let during = Task { try await Self.runTogether(6, environment: environment, arguments) }
            try await Task.sleep(for: .milliseconds(200))
            try await database.restart()
            for result in try await during.value {
                let code = result.errorLines.first.map { String($0.dropFirst("error: ".count).prefix { $0 != ":" }) }
                #expect(result.status == 0 || code == "store_error", "\(result.stderr)")
            }

            try await database.halt()
            let down = try await cli.run(arguments, timeout: .seconds(30))
            #expect(down.status == 1)
            #expect(down.errorLines.first?.hasPrefix("error: store_error: ") == true, "\(down.stderr)")
            #expect(!down.stderr.contains(database.password))

            try await database.restart()
            let back = try await cli.run(arguments)
            #expect(back.status == 0, "\(back.stderr)")
            #expect((try? JSONObject(back.stdout))?.string("username") == "alice")
        } catch {
            try? await database.stop()
            throw error
        }
        try await database.stop()
    }
}
