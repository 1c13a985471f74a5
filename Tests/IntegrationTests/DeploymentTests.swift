import ChildProcesses
import Foundation
import OAuth2
import Testing

/// Several copies of the program on one token store, against providers whose
/// access tokens live 2 seconds and that rotate refresh tokens with reuse
/// protection: presenting a spent refresh token revokes the whole grant. What
/// the provider recorded is the proof, not what the CLI says.
///
/// Serialized: the delay the kill tests arm is provider-wide, and the bursts
/// measure the machine's real concurrency.
@Suite(
    .serialized,
    .enabled(
        if: Provider.rotatingAreConfigured,
        "needs the rotating providers: `make test` starts them and sets OAUTH2_IT_ROTATE_PROVIDER and OAUTH2_IT_GRACE_PROVIDER")
)
struct DeploymentTests {
    static let burst = 8

    @Test func eightProcessesOnAnExpiredTokenRefreshOnceAndAllSucceedThreeTimesOver() async throws {
        try await Self.expectBurstsRefreshOnce(cli: try CLI())
    }

    /// A client that configured itself from a URL (`oauth2 call URL`:
    /// ``ProtectedResourceClient``, a registered client, tokens under the
    /// resource's account key) refreshes as every grant does: a burst of
    /// processes on an expired token makes one refresh, and the rotated
    /// refresh token is the one kept (the grant lives on, round after round).
    @Test func eightProcessesCallingADiscoveredResourceOnAnExpiredTokenRefreshOnce() async throws {
        let provider = try Provider.rotate()
        let resource = try ProtectedResources.rotate().resource("a")
        let cli = try CallDiscoveryCommandTests.cli()
        let (signIn, urls) = try await CallDiscoveryCommandTests.call(resource.hello, cli, provider, signIns: 1)
        #expect(signIn.status == 0, "\(signIn.stderr)")
        let clientID = try #require(urls.first.flatMap { CallDiscoveryCommandTests.parameter("client_id", in: $0).first })
        let resources = try ProtectedResources.rotate()

        for round in 1...2 {
            try await Task.sleep(for: .seconds(3))
            let before = try await resources.tokenRequests(clientID: clientID).filter { $0.grantType == "refresh_token" }.count
            let results = try await Self.runTogether(Self.burst, cli, ["call", resource.hello])
            for result in results {
                #expect(result.status == 0, "round \(round): \(result.stderr)")
                #expect((try? CallDiscoveryCommandTests.answer(result))?.string("username") == "alice", "round \(round)")
            }
            let refreshes = try await resources.tokenRequests(clientID: clientID).filter { $0.grantType == "refresh_token" }.dropFirst(
                before)
            #expect(refreshes.count == 1, "round \(round): one refresh at the provider, not \(refreshes.map(\.status))")
            #expect(refreshes.allSatisfy { $0.status == 200 }, "round \(round)")
            #expect(refreshes.allSatisfy { $0.resource == [resource.resource] }, "round \(round): the refresh names the resource")
            #expect(try await provider.liveRefreshTokens(clientID: clientID) == 1, "round \(round): the grant is alive")
        }
    }

    /// Signs alice in, then three times over: waits for the token to expire
    /// and runs a burst of `call`s; the provider must see one refresh each time.
    static func expectBurstsRefreshOnce(cli: CLI, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let provider = try Provider.rotate()
        let options = try provider.options(client: "confidential", for: cli)
        // Other tests' grants of alice to this client count too; this test's adds one.
        let otherGrants = try await provider.liveRefreshTokens(client: "confidential")
        let signIn = try await provider.authorize(with: cli, options: options)
        #expect(signIn.result.status == 0, "\(signIn.result.stderr)")

        for round in 1...3 {
            try await Task.sleep(for: .seconds(3))
            let recordedBefore = try await provider.tokenRequests(client: "confidential").requests.filter {
                $0.grantType == "refresh_token"
            }

            let results = try await Self.runTogether(Self.burst, cli, ["call", provider.endpoints.apiMe] + options)

            for result in results {
                #expect(result.status == 0, "round \(round): \(result.stderr)", sourceLocation: sourceLocation)
                #expect((try? JSONObject(result.stdout))?.string("username") == "alice", "round \(round)", sourceLocation: sourceLocation)
            }
            let refreshes = try await provider.tokenRequests(client: "confidential").requests
                .filter { $0.grantType == "refresh_token" }.dropFirst(recordedBefore.count)
            #expect(
                refreshes.count == 1,
                "round \(round): one refresh at the provider, not \(refreshes.map { "\($0.status) \($0.error ?? "")" })",
                sourceLocation: sourceLocation
            )
            #expect(refreshes.allSatisfy { $0.status == 200 }, "round \(round)", sourceLocation: sourceLocation)
            #expect(
                try await provider.liveRefreshTokens(client: "confidential") == otherGrants + 1, "round \(round): the grant is alive",
                sourceLocation: sourceLocation
            )
        }
    }

    /// Process A refreshes (the provider rotates the refresh token) into a
    /// store that cannot take the new token; process B starts while A still
    /// has it only in memory. B must not read the spent refresh token and
    /// spend it (with reuse protection that revokes the grant): A keeps the
    /// account locked and saves once the store recovers; B then goes on with
    /// what A saved.
    @Test func aTokenTheStoreCannotSaveIsNotSpentAgainByAnotherProcess() async throws {
        let provider = try Provider.rotate()
        let cli = try CLI()
        let options = try provider.options(client: "confidential", for: cli) + ["--timeout", "30"]
        let otherGrants = try await provider.liveRefreshTokens(client: "confidential")
        #expect(try await provider.authorize(with: cli, options: options).result.status == 0)
        try await Task.sleep(for: .seconds(3))
        let before = try await provider.tokenRequests(client: "confidential").requests.count

        let unwritable = try StoreWrites(blockedIn: cli.store)
        let a: Subprocess
        let b: Subprocess
        do {
            a = try cli.start(["call", provider.endpoints.apiMe] + options)
            _ = try await a.stderrLine(startingWith: "The token store cannot save the new token")
            b = try cli.start(["call", provider.endpoints.apiMe] + options)
            try await Task.sleep(for: .seconds(2))
            // B waits for the account's lock: the provider saw A's refresh only.
            #expect(try await provider.tokenRequests(client: "confidential").requests.dropFirst(before).count == 1)
            #expect(b.isRunning)
            try unwritable.restore()
        } catch {
            try unwritable.restore()
            throw error
        }

        let first = try await a.wait()
        let second = try await b.wait()
        #expect(first.status == 0, "\(first.stderr)")
        #expect(second.status == 0, "\(second.stderr)")
        let refreshes = try await provider.tokenRequests(client: "confidential").requests.dropFirst(before)
        #expect(refreshes.allSatisfy { $0.grantType == "refresh_token" && $0.status == 200 }, "\(refreshes)")
        #expect(try await provider.liveRefreshTokens(client: "confidential") == otherGrants + 1)
        let after = try await cli.run(["call", provider.endpoints.apiMe] + options)
        #expect(after.status == 0, "\(after.stderr)")
    }

    @Test func aProcessKilledHoldingTheLockAfterTheProviderRotatedLosesNothingWithAGracePeriod() async throws {
        let provider = try Provider.grace()
        let cli = try CLI()
        let options = try provider.options(client: "confidential", for: cli)
        let otherGrants = try await provider.liveRefreshTokens(client: "confidential")
        #expect(try await provider.authorize(with: cli, options: options).result.status == 0)
        try await Task.sleep(for: .seconds(3))

        let (killed, results) = try await Self.burstWithTheLockHolderKilled(provider, cli, options)
        #expect(killed.status != 0)

        for result in results {
            #expect(result.status == 0, "\(result.stderr)")
        }
        #expect(try await cli.storedToken() != nil, "the store is readable and holds a token")
        #expect(try await provider.liveRefreshTokens(client: "confidential") == otherGrants + 1)
        let after = try await cli.run(["call", provider.endpoints.apiMe] + options)
        #expect(after.status == 0, "\(after.stderr)")
    }

    @Test func aProcessKilledAfterTheProviderRotatedCostsTheGrantWithoutAGracePeriodAndTheOthersSaySo() async throws {
        let provider = try Provider.rotate()
        let cli = try CLI()
        let options = try provider.options(client: "confidential", for: cli)
        let otherGrants = try await provider.liveRefreshTokens(client: "confidential")
        #expect(try await provider.authorize(with: cli, options: options).result.status == 0)
        try await Task.sleep(for: .seconds(3))

        let recordedBefore = try await provider.tokenRequests(client: "confidential").requests.count + 1
        let (_, results) = try await Self.burstWithTheLockHolderKilled(provider, cli, options)

        // The killed process took the only copy of the rotated refresh token
        // with it; the stored one is spent, and presenting it revoked the
        // grant. The process that presented it and every one that waited
        // for the lock with the old token say reauthorization_required (a
        // process started after the token was deleted would find none:
        // not_authenticated). None hangs, none succeeds.
        let codes = results.map { result in
            result.errorLines.first.map { String($0.dropFirst("error: ".count).prefix { $0 != ":" }) } ?? "exit \(result.status)"
        }
        #expect(results.allSatisfy { $0.status == 1 }, "\(results.map(\.stderr))")
        #expect(codes == Array(repeating: "reauthorization_required", count: Self.burst - 1), "\(codes)")
        #expect(try await provider.liveRefreshTokens(client: "confidential") == otherGrants, "this grant was revoked")
        #expect(try await cli.storedToken() == nil)
        let requests = try await provider.tokenRequests(client: "confidential").requests.dropFirst(recordedBefore)
        #expect(requests.map(\.error) == ["invalid_grant"], "the spent refresh token was presented once, not by every process")
    }

    @Test func aClientCredentialsTokenIsRenewedWhenItExpires() async throws {
        let provider = try Provider.rotate()
        let cli = try CLI()
        let options = try provider.options(client: "service", for: cli)
        let grant = try await cli.run(["client-credentials"] + options)
        #expect(grant.status == 0, "\(grant.stderr)")
        let first = try #require(try await cli.storedToken())
        let before = try await provider.successfulTokenRequests(client: "service", grantType: "client_credentials")
        try await Task.sleep(for: .seconds(3))

        let call = try await cli.run(["call", provider.endpoints.apiMe] + options)

        #expect(call.status == 0, "\(call.stderr)")
        #expect(try JSONObject(call.stdout).string("client") == "service")
        #expect(try await provider.successfulTokenRequests(client: "service", grantType: "client_credentials") == before + 1)
        #expect(try await cli.storedToken()?.accessToken != first.accessToken)
    }

    @Test func aClientCredentialsTokenTheAPIRejectsIsRenewedOnce() async throws {
        let provider = try Provider.main()
        let cli = try CLI()
        let options = try provider.options(client: "service", for: cli)
        #expect(try await cli.run(["client-credentials"] + options).status == 0)
        let token = try #require(try await cli.storedToken())
        // Revoked at the provider behind the CLI's back: the API answers 401 invalid_token.
        let revoked = try await TokenEndpoint.revoke(provider, client: "service", token: token.accessToken.value)
        #expect(revoked.status == 200)
        let before = try await provider.successfulTokenRequests(client: "service", grantType: "client_credentials")

        let call = try await cli.run(["call", provider.endpoints.apiMe] + options)

        #expect(call.status == 0, "\(call.stderr)")
        #expect(try await provider.successfulTokenRequests(client: "service", grantType: "client_credentials") == before + 1)
    }

    @Test func aTokenIsNeverSentToAnotherProviderUnderTheSameAccountName() async throws {
        let first = try Provider.main()
        let second = try Provider.rotate()
        let cli = try CLI()
        let firstOptions = try first.options(client: "confidential", for: cli)
        #expect(try await first.authorize(with: cli, options: firstOptions).result.status == 0)
        let secondOptions = try second.options(client: "confidential", for: cli)
        let apiBefore = try second.loggedRequests(to: "/api/me")
        let tokenBefore = try await second.tokenRequests(client: "confidential").requests.count

        let call = try await cli.run(["call", second.endpoints.apiMe] + secondOptions)
        let refresh = try await cli.run(["refresh"] + secondOptions)
        let logout = try await cli.run(["logout"] + secondOptions)

        for result in [call, refresh, logout] {
            #expect(result.status == 1)
            #expect(result.errorLines.first?.hasPrefix("error: provider_mismatch: ") == true, "\(result.stderr)")
        }
        #expect(try second.loggedRequests(to: "/api/me") == apiBefore)
        #expect(try await second.tokenRequests(client: "confidential").requests.count == tokenBefore)
        let stillFirst = try await cli.run(["call", first.endpoints.apiMe] + firstOptions)
        #expect(stillFirst.status == 0, "\(stillFirst.stderr)")
    }

    /// The burst with its lock holder killed at the worst moment: one `call`
    /// refreshes with the provider's answer held, so that it holds the
    /// store's lock after the provider committed the rotated token; seven
    /// more start and wait for the lock; then the first is killed with
    /// SIGKILL, the kernel releases its lock, and the seven go on.
    ///
    /// - Returns: how the killed process and the seven others ended.
    static func burstWithTheLockHolderKilled(_ provider: Provider, _ cli: CLI, _ options: [String]) async throws -> (
        killed: Subprocess.Result, others: [Subprocess.Result]
    ) {
        // An answer still held from an earlier run would look like this one's.
        let quiet = ContinuousClock.now + .seconds(30)
        while try await provider.tokenRequests(client: "confidential").delaying != 0, ContinuousClock.now < quiet {
            try await Task.sleep(for: .milliseconds(100))
        }
        try await provider.delayNextTokenResponse(seconds: 6)
        let arguments = ["call", provider.endpoints.apiMe] + options
        let victim = try cli.start(arguments)
        victim.closeInput()
        let deadline = ContinuousClock.now + .seconds(30)
        while try await provider.tokenRequests(client: "confidential").delaying == 0 {
            guard ContinuousClock.now < deadline else {
                _ = try await victim.killHard()
                throw ProviderError(description: "the refresh never reached the provider")
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        let others = try (1..<Self.burst).map { _ in try cli.start(arguments) }
        for other in others { other.closeInput() }
        try await Task.sleep(for: .seconds(1))
        let waiting = others.filter { $0.isRunning }.count
        #expect(waiting == others.count, "the others wait for the lock the victim holds")
        let killed = try await victim.killHard()
        var results: [Subprocess.Result] = []
        for other in others {
            results.append(try await other.wait(timeout: .seconds(60)))
        }
        return (killed, results)
    }

    /// Starts `count` copies of `oauth2 arguments…` at once and returns how each ended.
    static func runTogether(_ count: Int, _ cli: CLI, _ arguments: [String]) async throws -> [Subprocess.Result] {
        try await runTogether(count, environment: cli.environment, arguments)
    }

    /// Starts `count` copies of `oauth2 arguments…` with `environment` at once and returns how each ended.
    ///
    /// "At once" is a start line: each copy waits in flock(1) for a shared
    /// lock on a file this test holds exclusively, and all go when it lets
    /// go. Spawned one after the other, on a loaded machine the last copy
    /// started seconds after the first, past a 2-second token's life, and
    /// rightly refreshed it again: the tests that count one refresh per
    /// burst then failed for the machine's load, not for the library.
    static func runTogether(_ count: Int, environment: [String: String], _ arguments: [String]) async throws -> [Subprocess.Result] {
        let binary = try CLI.binary()
        let startLine = FileManager.default.temporaryDirectory.appendingPathComponent("oauth2-start-\(UUID().uuidString)").path
        let fd = open(startLine, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw Subprocess.Timeout(description: "cannot create the start line \(startLine): errno \(errno)") }
        defer {
            close(fd)
            unlink(startLine)
        }
        guard flock(fd, LOCK_EX) == 0 else { throw Subprocess.Timeout(description: "cannot lock the start line: errno \(errno)") }
        let children = try (0..<count).map { _ in
            try Subprocess("/usr/bin/flock", ["--shared", "--close", startLine, binary] + arguments, environment: environment)
        }
        for child in children { child.closeInput() }
        // Time for every copy to reach the lock; one that has not yet simply starts a little later.
        try await Task.sleep(for: .milliseconds(500))
        flock(fd, LOCK_UN)
        var results: [Subprocess.Result] = []
        for child in children {
            results.append(try await child.wait(timeout: .seconds(90)))
        }
        return results
    }
}

/// Makes a directory refuse new files, as a full disk or a read-only mount
/// does, without filling a disk: for root, whom permissions do not stop,
/// the immutable attribute (chattr +i); for anyone else, mode 0500.
struct StoreWrites {
    let directory: String
    let asRoot = getuid() == 0

    init(blockedIn directory: String) throws {
        self.directory = directory
        if asRoot {
            try Self.chattr("+i", directory)
        } else {
            try FileManager.default.setAttributes([.posixPermissions: 0o500], ofItemAtPath: directory)
        }
    }

    func restore() throws {
        if asRoot {
            try Self.chattr("-i", directory)
        } else {
            try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: directory)
        }
    }

    private static func chattr(_ flag: String, _ path: String) throws {
        let ending = try ChildProcess("/usr/bin/chattr", [flag, path]).waitUntilExit()
        guard ending == .exited(0) else {
            throw ProviderError(description: "chattr \(flag) \(path) failed (\(ending))")
        }
    }
}
