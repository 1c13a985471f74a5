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

        let token = try await client.authenticateWithClientCredentials()
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
