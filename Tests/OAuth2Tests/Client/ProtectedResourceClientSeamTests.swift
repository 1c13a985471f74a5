import Foundation
import OAuth2
import OAuth2Testing
import Testing

/// ``ProtectedResourceClient/token(for:)`` and
/// ``ProtectedResourceClient/authorize(after:for:)``: the halves of `send`
/// for an app whose requests go out through another HTTP stack (an SDK's
/// transport with an authorization hook). The app's own requests go straight
/// to the canned world's transport, as an SDK's would.
@Suite struct ProtectedResourceClientSeamTests {
    private let resourceA = FakeResourceWorld.resourceURL("a")
    private let resourceB = FakeResourceWorld.resourceURL("b")

    private func client(
        _ world: FakeResourceWorld, store: InMemoryTokenStore = InMemoryTokenStore(), options: ProtectedResourceClient.Options = .init(),
        handler: Bool = true
    ) -> ProtectedResourceClient {
        ProtectedResourceClient(
            identity: ClientIdentity(clientID: "pre-1"), redirectHandler: handler ? FakeBrowser(world: world) : nil, store: store,
            account: "alice", options: options, transport: world.transport)
    }

    /// The app's own request, signed with `token` when it has one.
    private func appSends(_ url: URL, with token: AccessToken?, in world: FakeResourceWorld) async throws -> HTTPTransportResponse {
        var request = HTTPTransportRequest(url: url)
        if let token { request.headers[.authorization] = "Bearer \(token.accessToken.value)" }
        return try await world.transport.send(request)
    }

    @Test func aClientHoldsNoTokenForAResourceItDoesNotKnow() async throws {
        let world = FakeResourceWorld()
        #expect(try await client(world).token(for: resourceA) == nil)
        #expect(world.transport.requests.isEmpty)
    }

    @Test func aRefusalOfAnUnsignedRequestDiscoversSignsInAndGivesTheTokenToRetryWith() async throws {
        let world = FakeResourceWorld()
        let store = InMemoryTokenStore()
        let client = client(world, store: store)
        let refused = try await appSends(resourceA, with: nil, in: world)
        #expect(refused.status == 401)
        let token = try await client.authorize(after: refused, for: resourceA)
        let retried = try await appSends(resourceA, with: token, in: world)
        #expect(retried.status == 200)
        #expect(world.authorizeQueries.map { $0["resource"] } == [resourceA.absoluteString])

        // Another client on the same store holds it, with no round trip.
        let before = world.transport.requests.count
        let held = try await self.client(world, store: store).token(for: resourceA)
        #expect(held?.accessToken == token.accessToken)
        #expect(world.transport.requests.count == before)
    }

    @Test func aRefusalForWantOfScopeStepsUpWithTheUnion() async throws {
        let world = FakeResourceWorld(.init(requiredScopes: ["a": ["read", "write"]]))
        let client = client(world)
        let first = try await client.authorize(after: try await appSends(resourceA, with: nil, in: world), for: resourceA)
        let refused = try await appSends(resourceA, with: first, in: world)
        #expect(refused.status == 403)
        let second = try await client.authorize(after: refused, for: resourceA)
        #expect(try await appSends(resourceA, with: second, in: world).status == 200)
        #expect(world.authorizeQueries.map { $0["scope"] } == ["read", "read write"])
    }

    @Test func aReportedStepUpIsThrownWithWhatTheResourceAsked() async throws {
        let world = FakeResourceWorld(.init(requiredScopes: ["a": ["read", "write"]]))
        let client = client(world, options: .init(stepUp: .report))
        let first = try await client.authorize(after: try await appSends(resourceA, with: nil, in: world), for: resourceA)
        let refused = try await appSends(resourceA, with: first, in: world)
        let error = await oauth2Error { _ = try await client.authorize(after: refused, for: resourceA) }
        #expect(error?.code == .insufficientScope)
        #expect(error?.stepUp?.scopes == ["read", "write"])
        #expect(world.authorizeQueries.count == 1)
    }

    @Test func withoutARedirectHandlerASignInIsAuthorizationRequired() async throws {
        let world = FakeResourceWorld()
        let client = client(world, handler: false)
        let refused = try await appSends(resourceA, with: nil, in: world)
        let error = await oauth2Error { _ = try await client.authorize(after: refused, for: resourceA) }
        #expect(error?.code == .authorizationRequired)
        #expect(error?.stepUp?.resource == resourceA)
    }

    @Test func anAnswerThatIsNoRefusalIsNotAuthorizedAfter() async throws {
        let world = FakeResourceWorld()
        let ok = HTTPTransportResponse(status: .ok, url: resourceA)
        let error = await oauth2Error { _ = try await client(world).authorize(after: ok, for: resourceA) }
        #expect(error?.code == .unexpectedResponse)
        #expect(world.transport.requests.isEmpty)
    }

    @Test func theTokenForOneResourceIsNotTheOthers() async throws {
        let world = FakeResourceWorld()
        let client = client(world)
        let tokenA = try await client.authorize(after: try await appSends(resourceA, with: nil, in: world), for: resourceA)
        #expect(try await client.token(for: resourceB) == nil)
        let tokenB = try await client.authorize(after: try await appSends(resourceB, with: nil, in: world), for: resourceB)
        #expect(tokenA.accessToken != tokenB.accessToken)
        #expect(try await appSends(resourceB, with: tokenA, in: world).status == 401)
        #expect(try await client.token(for: resourceA)?.accessToken == tokenA.accessToken)
    }
}
