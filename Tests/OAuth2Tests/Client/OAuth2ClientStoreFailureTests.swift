import Foundation
@testable import OAuth2
import OAuth2Testing
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A token the provider issued is never lost to a store that fails: it is
/// kept in memory, used, reported, and saved again later.
@Suite struct OAuth2ClientStoreFailureTests {
    private func harness() throws -> (ClientHarness, FlakyTokenStore) {
        let flaky = LockedValue<FlakyTokenStore?>(nil)
        let harness = try ClientHarness { inner in
            let store = FlakyTokenStore(inner)
            flaky.withLock { $0 = store }
            return store
        }
        return (harness, try #require(flaky.withLock { $0 }))
    }

    @Test func aRotatedTokenTheStoreCannotSaveIsKeptUsedAndReported() async throws {
        let (harness, store) = try harness()
        try await harness.seed(expiresIn: -10)
        let delegate = RecordingDelegate()
        let client = harness.client(delegate: delegate)
        store.failsSaves = true
        harness.transport.enqueue(json: Fixture.tokenJSON(access: "at-2", refresh: "rt-2"), for: Fixture.tokenURL)
        harness.transport.enqueue(HTTPTransportResponse(status: 200), for: Fixture.apiURL)

        let response = try await client.send(HTTPTransportRequest(url: Fixture.apiURL))

        #expect(response.status == 200)
        #expect(harness.transport.requests(for: Fixture.apiURL).first?.authorization == "Bearer at-2")
        #expect(store.failedSaveCount == 1)
        #expect(try await harness.store.load(account: "alice")?.refreshToken?.value == Fixture.refreshToken)
        let storeFailures = delegate.events.compactMap { event -> OAuth2Error? in
            if case .failedToStoreAccessToken(let error) = event { return error }
            return nil
        }
        #expect(storeFailures.map(\.code) == [.storeError])
    }

    @Test func theNextRefreshSpendsTheKeptRefreshTokenNotTheStoredSpentOne() async throws {
        let (harness, store) = try harness()
        try await harness.seed(expiresIn: -10)
        store.failsSaves = true
        harness.transport.enqueue(json: Fixture.tokenJSON(access: "at-2", refresh: "rt-2", expiresIn: 100), for: Fixture.tokenURL)
        _ = try await harness.client().token()
        harness.clock.advance(by: .seconds(200))
        harness.transport.enqueue(json: Fixture.tokenJSON(access: "at-3", refresh: "rt-3"), for: Fixture.tokenURL)

        // A client made later (a server's per-request client) sees the kept token too.
        let token = try await harness.client().token()

        #expect(token.accessToken.value == "at-3")
        #expect(Fixture.formFields(harness.tokenRequests.last?.body)["refresh_token"] == "rt-2")
    }

    /// The next use is `token()` or a signed request: `send` signs with the
    /// held token without asking `token()` when it can, and an unsaved token
    /// due for another save is not such a case.
    @Test(arguments: [false, true])
    func theKeptTokenIsSavedOnTheNextUseOnceTheStoreRecovers(bySending: Bool) async throws {
        let (harness, store) = try harness()
        try await harness.seed(expiresIn: -10)
        let client = harness.client()
        store.failsSaves = true
        harness.transport.enqueue(json: Fixture.tokenJSON(access: "at-2", refresh: "rt-2"), for: Fixture.tokenURL)
        harness.transport.enqueue(HTTPTransportResponse(status: 200), for: Fixture.apiURL)
        harness.transport.enqueue(HTTPTransportResponse(status: 200), for: Fixture.apiURL)
        func use() async throws {
            if bySending {
                _ = try await client.send(HTTPTransportRequest(url: Fixture.apiURL))
            } else {
                _ = try await client.token()
            }
        }
        try await use()
        store.failsSaves = false
        harness.clock.advance(by: .seconds(2))

        try await use()

        let stored = try await harness.store.load(account: "alice")
        #expect(stored?.accessToken.value == "at-2")
        #expect(stored?.refreshToken?.value == "rt-2")
        #expect(harness.tokenRequests.count == 1)
        #expect(harness.transport.requests(for: Fixture.apiURL).map(\.authorization) == (bySending ? ["Bearer at-2", "Bearer at-2"] : []))
    }

    @Test func saveUnsavedTokenFailsWhileTheStoreFailsAndSavesOnceItRecovers() async throws {
        let (harness, store) = try harness()
        try await harness.seed(expiresIn: -10)
        let client = harness.client()
        store.failsSaves = true
        harness.transport.enqueue(json: Fixture.tokenJSON(access: "at-2", refresh: "rt-2"), for: Fixture.tokenURL)
        _ = try await client.token()

        let error = await oauth2Error { try await client.saveUnsavedToken() }
        #expect(error?.code == .storeError)
        store.failsSaves = false
        try await client.saveUnsavedToken()

        #expect(try await harness.store.load(account: "alice")?.refreshToken?.value == "rt-2")
    }

    @Test func aGrantsTokenTheStoreCannotSaveIsStillReturnedAndUsed() async throws {
        let (harness, store) = try harness()
        let delegate = RecordingDelegate()
        let client = harness.client("service", delegate: delegate)
        store.failsSaves = true
        harness.transport.enqueue(json: Fixture.tokenJSON(access: "cc-1", refresh: nil), for: Fixture.tokenURL)
        harness.transport.enqueue(HTTPTransportResponse(status: 200), for: Fixture.apiURL)

        let token = try await client.authenticate(.clientCredentials)
        _ = try await client.send(HTTPTransportRequest(url: Fixture.apiURL))

        #expect(token.accessToken.value == "cc-1")
        #expect(harness.transport.requests(for: Fixture.apiURL).first?.authorization == "Bearer cc-1")
        #expect(delegate.events.contains { if case .failedToStoreAccessToken = $0 { true } else { false } })
        #expect(delegate.events.contains { if case .gotAccessToken = $0 { true } else { false } })
    }

    @Test func theStoreFailureIsLoggedAtWarningWithoutASecret() async throws {
        let (harness, store) = try harness()
        try await harness.seed(expiresIn: -10)
        store.failsSaves = true
        harness.transport.enqueue(json: Fixture.tokenJSON(access: "at-secret-2", refresh: "rt-secret-2"), for: Fixture.tokenURL)

        _ = try await harness.client().token()

        let warnings = harness.logs.all.filter { $0.hasPrefix("warning ") }
        #expect(warnings.count == 1)
        #expect(warnings.first?.contains("store_error") == true)
        for line in harness.logs.all {
            #expect(!line.contains("at-secret-2") && !line.contains("rt-secret-2") && !line.contains(Fixture.refreshToken))
        }
    }

    @Test func anEventStreamHearsTheStoreFailure() async throws {
        let (harness, store) = try harness()
        try await harness.seed(expiresIn: -10)
        let client = harness.client()
        let events = client.events
        store.failsSaves = true
        harness.transport.enqueue(json: Fixture.tokenJSON(access: "at-2", refresh: "rt-2"), for: Fixture.tokenURL)

        _ = try await client.token()

        var iterator = events.makeAsyncIterator()
        var heard: [OAuth2Event] = []
        for _ in 0..<2 { if let event = await iterator.next() { heard.append(event) } }
        #expect(heard.contains { if case .failedToStoreAccessToken(let error) = $0 { error.code == .storeError } else { false } })
    }

    @Test(arguments: FileTokenStore.SaveStep.allCases)
    func aFileStoreFailingAtAnyStepOfASaveLosesNoRotatedToken(step: FileTokenStore.SaveStep) async throws {
        let scratch = try ScratchDirectory()
        let failing = LockedValue<FileTokenStore.SaveStep?>(nil)
        let store = try FileTokenStore(
            directory: scratch.storePath, encryption: .plaintext,
            hooks: .init(failing: { current in
                failing.withLock { $0 } == current ? .error(ENOSPC) : nil
            }))
        let transport = CannedTransport()
        let clock = ManualClock()
        let provider = try OAuth2Provider(configuration: Fixture.configuration(), store: store, transport: transport, clock: clock)
        var old = Fixture.token(access: "at-1", refresh: "rt-1", expiresAt: clock.now().addingTimeInterval(-10))
        old.binding = provider.configuration.binding
        try await store.save(old, account: "alice")
        failing.withLock { $0 = step }
        transport.enqueue(json: Fixture.tokenJSON(access: "at-2", refresh: "rt-2"), for: Fixture.tokenURL)
        transport.enqueue(HTTPTransportResponse(status: 200), for: Fixture.apiURL)
        let client = provider.client(account: "alice")

        let response = try await client.send(HTTPTransportRequest(url: Fixture.apiURL))

        #expect(response.status == 200)
        #expect(transport.requests(for: Fixture.apiURL).first?.authorization == "Bearer at-2")
        // The file holds the old token or, once the rename happened, the new one; never a torn one.
        let onDisk = try await FileTokenStore(directory: scratch.storePath).load(account: "alice")
        #expect(onDisk?.accessToken.value == (step == .synchronizeDirectory ? "at-2" : "at-1"))
        #expect(try scratch.storeEntries().allSatisfy { $0.hasSuffix(".token") || $0.hasSuffix(".lock") })

        failing.withLock { $0 = nil }
        try await client.saveUnsavedToken()
        let saved = try await FileTokenStore(directory: scratch.storePath).load(account: "alice")
        #expect(saved?.accessToken.value == "at-2")
        #expect(saved?.refreshToken?.value == "rt-2")
    }
}

/// Two providers on one file store directory: two processes, in production.
/// A token one of them could not save must not let the other spend the
/// refresh token it replaced.
@Suite struct KeptAccountLockTests {
    /// A provider over its own `FileTokenStore` on `directory`, whose saves fail while `failing` says so.
    static func provider(
        directory: String, failing: LockedValue<Bool>, transport: CannedTransport, clock: ManualClock,
        requestTimeout: Duration = .seconds(1)
    ) throws -> OAuth2Provider {
        let store = try FileTokenStore(
            directory: directory, encryption: .plaintext,
            hooks: .init(failing: { step in step == .rename && failing.withLock { $0 } ? .error(ENOSPC) : nil }))
        var configuration = try Fixture.configuration()
        configuration.requestTimeout = requestTimeout
        return try OAuth2Provider(configuration: configuration, store: store, transport: transport, clock: clock)
    }

    /// Stores alice's expired token (at-1, rt-1), issued to `provider`, with `grant` when given.
    static func seedExpiredToken(_ provider: OAuth2Provider, clock: ManualClock, grant: TokenGrant? = nil) async throws {
        var old = Fixture.token(access: "at-1", refresh: "rt-1", expiresAt: clock.now().addingTimeInterval(-10))
        old.binding = provider.configuration.binding
        old.grant = grant
        try await provider.store.save(old, account: "alice")
    }

    @Test func anotherStoreWaitsForTheLockUntilTheRotatedTokenIsSavedAndNeverSpendsTheOldOne() async throws {
        let scratch = try ScratchDirectory()
        let transport = CannedTransport()
        let clock = ManualClock()
        let failsA = LockedValue(false)
        let a = try Self.provider(directory: scratch.storePath, failing: failsA, transport: transport, clock: clock)
        let b = try Self.provider(directory: scratch.storePath, failing: LockedValue(false), transport: transport, clock: clock)
        try await Self.seedExpiredToken(a, clock: clock)

        // A rotates rt-1 → rt-2 and cannot save it.
        failsA.withLock { $0 = true }
        transport.enqueue(json: Fixture.tokenJSON(access: "at-2", refresh: "rt-2"), for: Fixture.tokenURL)
        #expect(try await a.client(account: "alice").token().accessToken.value == "at-2")

        // B finds rt-1 in the store: it waits for the lock instead of spending it.
        let waiting = Task { try await b.client(account: "alice").token() }
        try await Task.sleep(for: .milliseconds(300))
        #expect(transport.requests(for: Fixture.tokenURL).count == 1)
        // A's store recovers; A saves rt-2 and lets go; B uses what A saved.
        failsA.withLock { $0 = false }
        #expect(try await waiting.value.accessToken.value == "at-2")
        #expect(transport.requests(for: Fixture.tokenURL).count == 1)
        #expect(try await b.store.load(account: "alice")?.refreshToken?.value == "rt-2")
    }

    /// A provider on a scratch store directory whose client has refreshed
    /// alice's expired token (at-1, rt-1 → at-2, rt-2, living `expiresIn`
    /// seconds) into a store that fails until `fails` is set back to `false`.
    struct RefreshedIntoAFailingStore {
        let scratch: ScratchDirectory
        let transport = CannedTransport()
        let clock = ManualClock()
        let fails = LockedValue(false)
        let provider: OAuth2Provider

        init(expiresIn: Int = 3600) async throws {
            scratch = try ScratchDirectory()
            provider = try KeptAccountLockTests.provider(directory: scratch.storePath, failing: fails, transport: transport, clock: clock)
            try await KeptAccountLockTests.seedExpiredToken(provider, clock: clock)
            fails.withLock { $0 = true }
            transport.enqueue(json: Fixture.tokenJSON(access: "at-2", refresh: "rt-2", expiresIn: expiresIn), for: Fixture.tokenURL)
            _ = try await provider.client(account: "alice").token()
        }
    }

    @Test func whileTheLockIsKeptTheProvidersOwnClientsRefreshUnderIt() async throws {
        let world = try await RefreshedIntoAFailingStore(expiresIn: 100)
        let (scratch, transport, clock, fails, provider) = (world.scratch, world.transport, world.clock, world.fails, world.provider)

        // The kept token expires while the store is still down: the next refresh spends rt-2, under the kept lock.
        clock.advance(by: .seconds(200))
        transport.enqueue(json: Fixture.tokenJSON(access: "at-3", refresh: "rt-3"), for: Fixture.tokenURL)
        #expect(try await provider.client(account: "alice").token().accessToken.value == "at-3")
        #expect(Fixture.formFields(transport.requests(for: Fixture.tokenURL).last?.body)["refresh_token"] == "rt-2")

        fails.withLock { $0 = false }
        try await provider.client(account: "alice").saveUnsavedToken(waitingUpTo: .seconds(20))
        #expect(try await provider.store.load(account: "alice")?.refreshToken?.value == "rt-3")
        // Released once saved: another store on the directory takes the lock at once.
        let other = try FileTokenStore(directory: scratch.storePath)
        try await other.withLock(account: "alice", timeout: .seconds(5)) {}
    }

    @Test func saveUnsavedTokenWaitsForTheStoreUpToTheTimeGiven() async throws {
        let world = try await RefreshedIntoAFailingStore()
        let (scratch, fails) = (world.scratch, world.fails)
        let client = world.provider.client(account: "alice")

        let error = await oauth2Error { try await client.saveUnsavedToken(waitingUpTo: .milliseconds(300)) }
        #expect(error?.code == .storeError)
        let saving = Task { try await client.saveUnsavedToken(waitingUpTo: .seconds(20)) }
        try await Task.sleep(for: .milliseconds(200))
        fails.withLock { $0 = false }
        try await saving.value
        #expect(try await FileTokenStore(directory: scratch.storePath).load(account: "alice")?.refreshToken?.value == "rt-2")
    }

    /// The lock is held for a refused refresh and the renewal by the
    /// token's grant, each within the request timeout, longer than it
    /// together: a waiter must not give up on a holder making progress.
    @Test func aWaiterOutlastsAHolderWhoseRequestsTogetherTakeLongerThanOneTimeout() async throws {
        let scratch = try ScratchDirectory()
        let transport = CannedTransport()
        let clock = ManualClock()
        let a = try Self.provider(
            directory: scratch.storePath, failing: LockedValue(false), transport: transport, clock: clock,
            requestTimeout: .milliseconds(400))
        let b = try Self.provider(
            directory: scratch.storePath, failing: LockedValue(false), transport: transport, clock: clock,
            requestTimeout: .milliseconds(400))
        try await Self.seedExpiredToken(a, clock: clock, grant: TokenGrant(type: TokenGrant.clientCredentialsType, scopes: []))
        // The refresh is refused after 300 ms; the client credentials grant answers after 300 ms more.
        let answered = LockedValue(0)
        transport.respond { request in
            try await Task.sleep(for: .milliseconds(300))
            let first = answered.withLock { count -> Bool in
                count += 1
                return count == 1
            }
            let body = first ? #"{"error":"invalid_grant"}"# : Fixture.tokenJSON(access: "at-2", refresh: "rt-2")
            return HTTPTransportResponse(status: first ? 400 : 200, headers: [.contentType: "application/json"], body: Data(body.utf8))
        }
        let holding = Task { try await a.client(account: "alice").token() }
        try await Task.sleep(for: .milliseconds(100))
        let waiting = try await b.client(account: "alice").token()

        #expect(waiting.accessToken.value == "at-2")
        #expect(try await holding.value.accessToken.value == "at-2")
        #expect(transport.requests(for: Fixture.tokenURL).count == 2)
    }
}
