import Foundation
import OAuth2
import OAuth2Testing
import Testing

/// ``ProtectedResourceClient``'s discovery and identification are single
/// flight: concurrent first calls for a resource fetch each document once,
/// and concurrent first calls at an authorization server register once.
@Suite struct ProtectedResourceClientDiscoveryTests {
    private let resourceA = FakeResourceWorld.resourceURL("a")
    private let resourceB = FakeResourceWorld.resourceURL("b")
    private static let resourceMetadataPath = "/.well-known/oauth-protected-resource/"
    private static let serverMetadataPath = "/.well-known/oauth-authorization-server"

    private func client(_ world: FakeResourceWorld, store: any TokenStore & ClientRecordStore = InMemoryTokenStore())
        -> ProtectedResourceClient
    {
        ProtectedResourceClient(
            identity: ClientIdentity(registrationMetadata: ClientMetadata(redirectURIs: [FakeResourceWorld.redirectURI])),
            redirectHandler: FakeBrowser(world: world), store: store, account: "alice", transport: world.transport)
    }

    /// Answers as `world` does, except that answers to requests whose path
    /// satisfies `held` wait until `release` says so.
    private func hold(
        _ world: FakeResourceWorld, where held: @escaping @Sendable (String) -> Bool, within limit: Duration = .seconds(10),
        until release: @escaping @Sendable () -> Bool
    ) {
        world.transport.respond { [world] request in
            if held(request.url.path) {
                try await Self.waitUntil(within: limit, release)
            }
            return world.answer(request)
        }
    }

    /// A registration is answered when a second one is asked for, or after
    /// 300 ms: time for a second caller to ask.
    private func holdRegistrationsUntilASecondIsAsked(_ world: FakeResourceWorld) {
        hold(world, where: { $0 == "/register" }, within: .milliseconds(300)) {
            world.transport.requests.filter { $0.url.path == "/register" }.count >= 2
        }
    }

    private static func waitUntil(within limit: Duration = .seconds(10), _ condition: @Sendable () -> Bool) async throws {
        let deadline = ContinuousClock.now + limit
        while !condition() && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(2))
        }
    }

    private func count(_ world: FakeResourceWorld, path: (String) -> Bool) -> Int {
        world.transport.requests.filter { path($0.url.path) }.count
    }

    @Test func concurrentFirstCallsForAResourceShareOneDiscoveryAndOneRegistration() async throws {
        let world = FakeResourceWorld()
        let client = client(world)
        let callers = 8
        let resourceA = resourceA
        // The metadata is answered only once every caller has been refused, so that all of them want it at once.
        hold(world, where: { $0.hasPrefix(Self.resourceMetadataPath) }) {
            world.transport.requests(for: resourceA).count >= callers
        }
        let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<callers {
                group.addTask { try await client.send(HTTPTransportRequest(url: resourceA)).status.code }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(statuses == Array(repeating: 200, count: callers))
        #expect(count(world) { $0.hasPrefix(Self.resourceMetadataPath) } == 1)
        #expect(count(world) { $0 == Self.serverMetadataPath } == 1)
        #expect(world.registrations == 1)
        #expect(Set(world.authorizeQueries.map { $0["client_id"] }) == ["dyn-1"])
    }

    @Test func concurrentFirstCallsForTwoResourcesOfOneServerRegisterOnce() async throws {
        let world = FakeResourceWorld()
        let client = client(world)
        holdRegistrationsUntilASecondIsAsked(world)
        async let a = client.send(HTTPTransportRequest(url: resourceA))
        async let b = client.send(HTTPTransportRequest(url: resourceB))
        let (answerA, answerB) = try await (a, b)
        #expect(answerA.status == 200 && answerB.status == 200)
        #expect(world.registrations == 1)
        #expect(world.authorizeQueries.map { $0["client_id"] } == ["dyn-1", "dyn-1"])
    }

    /// Two clients on one store, as two processes on one store directory:
    /// the store's lock for the registration and a second read under it.
    @Test func twoClientsOnOneStoreRegisterOnceUnderTheStoresLock() async throws {
        let world = FakeResourceWorld()
        let store = InMemoryTokenStore()
        let first = client(world, store: store)
        let second = client(world, store: store)
        holdRegistrationsUntilASecondIsAsked(world)
        async let a = first.send(HTTPTransportRequest(url: resourceA))
        async let b = second.send(HTTPTransportRequest(url: resourceA))
        let (answerA, answerB) = try await (a, b)
        #expect(answerA.status == 200 && answerB.status == 200)
        #expect(world.registrations == 1)
        // The second may find the first's token already stored for the account, and sign in no more.
        #expect(Set(world.authorizeQueries.map { $0["client_id"] }) == ["dyn-1"])
    }

    /// Calls that all heard `invalid_client` register again once, and the
    /// last to get there deletes neither the new registration nor the token
    /// the first already got with it. The store holds the second deletion of
    /// a registration until the first call is done, as a slow caller would be.
    @Test func aLateCallThatHeardTheRegistrationWasForgottenKeepsTheNewOneAndItsToken() async throws {
        let world = FakeResourceWorld()
        let store = LateDeletingStore()
        let client = client(world, store: store)
        _ = try await client.send(HTTPTransportRequest(url: resourceA))
        world.forget("dyn-1")
        let account = try await FakeResourceWorld.expireAlicesToken(for: resourceA, in: store)
        store.holdSecondDeletion { world.authorizeQueries.count >= 2 }

        // A new client (a new process): it knows the expired token, not a fresh one.
        let next = self.client(world, store: store)
        let resourceA = resourceA
        let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<2 {
                group.addTask { try await next.send(HTTPTransportRequest(url: resourceA)).status.code }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(statuses == [200, 200])
        #expect(world.registrations == 2)
        #expect(try await store.loadRegistration(issuer: FakeResourceWorld.issuer)?.clientID == "dyn-2")
        #expect(try await store.load(account: account)?.binding?.clientID == "dyn-2")
    }

    @Test func aFailedDiscoveryIsSharedByItsWaitersAndTheNextCallTriesAgain() async throws {
        let world = FakeResourceWorld()
        let client = client(world)
        let callers = 4
        let resourceA = resourceA
        let failing = LockedValue(true)
        world.transport.respond { [world] request in
            if request.url.path.hasPrefix(Self.resourceMetadataPath), failing.withLock({ $0 }) {
                try await Self.waitUntil { world.transport.requests(for: resourceA).count >= callers }
                return HTTPTransportResponse(status: 503)
            }
            return world.answer(request)
        }
        let codes = await withTaskGroup(of: OAuth2Error.Code?.self) { group in
            for _ in 0..<callers {
                group.addTask { await oauth2Error { _ = try await client.send(HTTPTransportRequest(url: resourceA)) }?.code }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(codes.count == callers)
        #expect(codes.allSatisfy { $0 != nil && $0 == codes[0] })
        #expect(count(world) { $0.hasPrefix(Self.resourceMetadataPath) } == 1)

        failing.withLock { $0 = false }
        let response = try await client.send(HTTPTransportRequest(url: resourceA))
        #expect(response.status == 200)
        #expect(count(world) { $0.hasPrefix(Self.resourceMetadataPath) } == 2)
    }

    @Test func cancellingTheCallerThatStartedADiscoveryDoesNotFailTheOthers() async throws {
        let world = FakeResourceWorld()
        let client = client(world)
        let resourceA = resourceA
        let released = LockedValue(false)
        hold(world, where: { $0.hasPrefix(Self.resourceMetadataPath) }) { released.withLock { $0 } }
        let first = Task { try await client.send(HTTPTransportRequest(url: resourceA)) }
        try await Self.waitUntil { world.transport.requests.contains { $0.url.path.hasPrefix(Self.resourceMetadataPath) } }
        let second = Task { try await client.send(HTTPTransportRequest(url: resourceA)) }
        try await Self.waitUntil { world.transport.requests(for: resourceA).count >= 2 }
        first.cancel()
        released.withLock { $0 = true }
        let response = try await second.value
        #expect(response.status == 200)
        _ = await first.result
        #expect(count(world) { $0.hasPrefix(Self.resourceMetadataPath) } == 1)
        #expect(world.registrations == 1)
    }
}

/// An ``InMemoryTokenStore`` whose second deletion of a registration waits until a condition holds (or a second passed).
final class LateDeletingStore: TokenStore, ClientRecordStore {
    let inner = InMemoryTokenStore()
    private let state = LockedValue<(deletions: Int, release: (@Sendable () -> Bool)?)>((0, nil))

    func holdSecondDeletion(until release: @escaping @Sendable () -> Bool) { state.withLock { $0.release = release } }

    func load(account: String) async throws(OAuth2Error) -> AccessToken? { try await inner.load(account: account) }
    func save(_ token: AccessToken, account: String) async throws(OAuth2Error) { try await inner.save(token, account: account) }
    func delete(account: String) async throws(OAuth2Error) { try await inner.delete(account: account) }
    func withLock<Result: Sendable>(
        account: String, timeout: Duration, _ body: () async throws(OAuth2Error) -> Result
    ) async throws(OAuth2Error) -> Result {
        try await inner.withLock(account: account, timeout: timeout, body)
    }
    var isPersistent: Bool { false }
    func loadRecord(_ key: ClientRecordKey) async throws(OAuth2Error) -> Data? { try await inner.loadRecord(key) }
    func saveRecord(_ record: Data, for key: ClientRecordKey) async throws(OAuth2Error) { try await inner.saveRecord(record, for: key) }
    func deleteRecord(_ key: ClientRecordKey) async throws(OAuth2Error) {
        let release = state.withLock { state -> (@Sendable () -> Bool)? in
            guard key.kind == "registration" else { return nil }
            state.deletions += 1
            return state.deletions == 2 ? state.release : nil
        }
        if let release {
            let deadline = ContinuousClock.now + .seconds(1)
            while !release() && ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(2)) }
        }
        try await inner.deleteRecord(key)
    }
}
