import Foundation
import OAuth2
import OAuth2Testing
import Testing

/// ``ProtectedResourceClient`` against a canned resource and authorization
/// server: from a bare URL to a signed answer, a token per resource, step-up.
/// The MCP authorization spec's client requirements are named `mcpClient…`.
@Suite struct ProtectedResourceClientTests {
    private let resourceA = FakeResourceWorld.resourceURL("a")
    private let resourceB = FakeResourceWorld.resourceURL("b")

    private func client(
        _ world: FakeResourceWorld, store: InMemoryTokenStore = InMemoryTokenStore(), identity: ClientIdentity? = nil,
        options: ProtectedResourceClient.Options = .init(), handler: Bool = true
    ) -> ProtectedResourceClient {
        ProtectedResourceClient(
            identity: identity ?? ClientIdentity(registrationMetadata: ClientMetadata(redirectURIs: [FakeResourceWorld.redirectURI])),
            redirectHandler: handler ? FakeBrowser(world: world) : nil, store: store, account: "alice", options: options,
            transport: world.transport)
    }

    private func get(_ url: URL) -> HTTPTransportRequest { HTTPTransportRequest(url: url) }

    // MARK: - From a URL to a token

    @Test func mcpClientDiscoversFromTheChallengesResourceMetadataAndSignsTheRetry() async throws {
        let world = FakeResourceWorld()
        let response = try await client(world, identity: ClientIdentity(clientID: "pre-1")).send(get(resourceA))
        #expect(response.status == 200)
        #expect(String(decoding: response.body, as: UTF8.self) == "ok a")
        let hosts = world.transport.requests.map { "\($0.method) \($0.url.host ?? "")\($0.url.path)" }
        #expect(
            hosts == [
                "GET mcp.example/a", "GET mcp.example/.well-known/oauth-protected-resource/a",
                "GET auth.example/.well-known/oauth-authorization-server", "POST auth.example/token", "GET mcp.example/a",
            ])
        #expect(world.transport.requests.first?.headers[.authorization] == nil)
        #expect(world.transport.requests.last?.headers[.authorization]?.hasPrefix("Bearer at-world-") == true)
    }

    @Test func mcpClientSendsTheResourceOnTheAuthorizationTheCodeAndTheRefreshRequests() async throws {
        let world = FakeResourceWorld()
        let store = InMemoryTokenStore()
        let client = client(world, store: store, identity: ClientIdentity(clientID: "pre-1"))
        _ = try await client.send(get(resourceA))
        #expect(world.authorizeQueries.map { $0["resource"] } == [resourceA.absoluteString])
        // Expire the token so that the next call refreshes.
        try await FakeResourceWorld.expireAlicesToken(for: resourceA, in: store)
        let fresh = self.client(world, store: store, identity: ClientIdentity(clientID: "pre-1"))
        _ = try await fresh.send(get(resourceA))
        #expect(world.tokenRequests.map { $0["grant_type"] } == ["authorization_code", "refresh_token"])
        #expect(world.tokenRequests.map { $0["resource"] } == [resourceA.absoluteString, resourceA.absoluteString])
    }

    @Test func mcpClientUsesPKCES256() async throws {
        let world = FakeResourceWorld()
        _ = try await client(world, identity: ClientIdentity(clientID: "pre-1")).send(get(resourceA))
        #expect(world.authorizeQueries.first?["code_challenge_method"] == "S256")
        #expect(world.authorizeQueries.first?["code_challenge"]?.isEmpty == false)
        #expect(world.tokenRequests.first?["code_verifier"]?.isEmpty == false)
    }

    @Test(arguments: [nil, ["plain"]] as [[String]?])
    func mcpClientRefusesAServerThatDoesNotAdvertiseS256(methods: [String]?) async throws {
        let world = FakeResourceWorld(.init(codeChallengeMethods: methods))
        let error = await oauth2Error { _ = try await client(world, identity: ClientIdentity(clientID: "pre-1")).send(get(resourceA)) }
        #expect(error?.code == .invalidConfiguration)
        #expect(error?.message.contains("S256") == true)
        #expect(world.authorizeQueries.isEmpty)
    }

    @Test func mcpClientUsesTheChallengesScopeThenScopesSupportedForTheFirstSignIn() async throws {
        let world = FakeResourceWorld(.init(scopesSupported: ["read", "tools"]))
        _ = try await client(world, identity: ClientIdentity(clientID: "pre-1")).send(get(resourceA))
        #expect(world.authorizeQueries.first?["scope"] == "read tools")
    }

    // MARK: - Identity

    @Test func mcpClientPrefersAClientIDMetadataDocumentWhenTheServerSupportsThem() async throws {
        let world = FakeResourceWorld(.init(metadataDocumentsSupported: true))
        let document = URL(string: "https://app.example/oauth/client.json")!
        let identity = ClientIdentity(
            metadataDocumentURL: document, registrationMetadata: ClientMetadata(redirectURIs: [FakeResourceWorld.redirectURI]),
            clientID: "pre-1")
        _ = try await client(world, identity: identity).send(get(resourceA))
        #expect(world.authorizeQueries.first?["client_id"] == document.absoluteString)
        #expect(world.registrations == 0)
    }

    @Test func aPreRegisteredClientIDIsUsedWhenTheServerOffersNothingElse() async throws {
        let world = FakeResourceWorld(.init(registrationEndpoint: false))
        let identity = ClientIdentity(
            metadataDocumentURL: URL(string: "https://app.example/client.json")!,
            registrationMetadata: ClientMetadata(redirectURIs: [FakeResourceWorld.redirectURI]), clientID: "pre-1")
        _ = try await client(world, identity: identity).send(get(resourceA))
        #expect(world.authorizeQueries.first?["client_id"] == "pre-1")
    }

    @Test func noClientIdentityWhenNoWayFits() async throws {
        let world = FakeResourceWorld(.init(registrationEndpoint: false))
        let identity = ClientIdentity(metadataDocumentURL: URL(string: "https://app.example/client.json")!)
        let error = await oauth2Error { _ = try await client(world, identity: identity).send(get(resourceA)) }
        #expect(error?.code == .noClientIdentity)
    }

    @Test func mcpClientRegistersDynamicallyOnceAndKeepsTheRegistration() async throws {
        let world = FakeResourceWorld()
        let store = InMemoryTokenStore()
        _ = try await client(world, store: store).send(get(resourceA))
        _ = try await client(world, store: store).send(get(resourceB))
        #expect(world.registrations == 1)
        #expect(world.authorizeQueries.map { $0["client_id"] } == ["dyn-1", "dyn-1"])
        #expect(try await store.loadRegistration(issuer: FakeResourceWorld.issuer)?.clientID == "dyn-1")
    }

    // MARK: - Kept for next time

    @Test func aSecondClientOnTheSameStoreMakesNoRoundTripToDiscoveryOrRegistration() async throws {
        let world = FakeResourceWorld()
        let store = InMemoryTokenStore()
        _ = try await client(world, store: store).send(get(resourceA))
        let before = world.transport.requests.count
        let response = try await client(world, store: store).send(get(resourceA.appendingPathComponent("tools")))
        #expect(response.status == 200)
        let after = Array(world.transport.requests.dropFirst(before))
        #expect(after.map(\.url.path) == ["/a/tools"])
        #expect(after.first?.headers[.authorization]?.hasPrefix("Bearer ") == true)
    }

    // MARK: - A token per resource

    @Test func twoResourcesGetTwoTokensAndEachIsRefusedByTheOther() async throws {
        let world = FakeResourceWorld()
        let store = InMemoryTokenStore()
        let client = client(world, store: store, identity: ClientIdentity(clientID: "pre-1"))
        _ = try await client.send(get(resourceA))
        _ = try await client.send(get(resourceB))
        let tokenA = try #require(
            try await store.load(
                account: ProtectedResourceClient.tokenAccount(
                    authorizationServer: FakeResourceWorld.issuer, resource: resourceA.absoluteString, account: "alice")))
        let tokenB = try #require(
            try await store.load(
                account: ProtectedResourceClient.tokenAccount(
                    authorizationServer: FakeResourceWorld.issuer, resource: resourceB.absoluteString, account: "alice")))
        #expect(tokenA.accessToken != tokenB.accessToken)
        #expect(tokenA.binding?.resource == resourceA.absoluteString)
        #expect(tokenB.binding?.resource == resourceB.absoluteString)
        let before = world.transport.requests.count
        let aToB = await oauth2Error { _ = try await SigningTransport(wrapping: world.transport, tokenSource: tokenA).send(get(resourceB)) }
        let bToA = await oauth2Error { _ = try await SigningTransport(wrapping: world.transport, tokenSource: tokenB).send(get(resourceA)) }
        #expect(aToB?.code == .resourceMismatch)
        #expect(bToA?.code == .resourceMismatch)
        #expect(world.transport.requests.count == before)
    }

    // MARK: - The account (AT Protocol)

    @Test func aTokenResponseForAnotherSubjectIsRefusedNotKeptAndRevoked() async throws {
        let world = FakeResourceWorld(.init(subject: "did:plc:mallory"))
        let store = InMemoryTokenStore()
        let options = ProtectedResourceClient.Options(expectedSubject: "did:plc:alice")
        let error = await oauth2Error {
            _ = try await client(world, store: store, identity: ClientIdentity(clientID: "pre-1"), options: options).send(get(resourceA))
        }
        #expect(error?.code == .subjectMismatch)
        #expect(world.revocations >= 1)
        let account = ProtectedResourceClient.tokenAccount(
            authorizationServer: FakeResourceWorld.issuer, resource: resourceA.absoluteString, account: "alice")
        #expect(try await store.load(account: account) == nil)
        #expect(world.transport.requests.filter { $0.url.host == "mcp.example" && $0.headers[.authorization] != nil }.isEmpty)
    }

    @Test func aTokenResponseForTheExpectedSubjectIsKept() async throws {
        let world = FakeResourceWorld(.init(subject: "did:plc:alice"))
        let options = ProtectedResourceClient.Options(expectedSubject: "did:plc:alice")
        let response = try await client(world, identity: ClientIdentity(clientID: "pre-1"), options: options).send(get(resourceA))
        #expect(response.status == 200)
    }

    // MARK: - Step-up

    @Test func insufficientScopeReauthorizesWithTheUnionAndRetries() async throws {
        let world = FakeResourceWorld(.init(requiredScopes: ["a": ["read", "write"]]))
        let response = try await client(world, identity: ClientIdentity(clientID: "pre-1")).send(get(resourceA))
        #expect(response.status == 200)
        #expect(world.authorizeQueries.map { $0["scope"] } == ["read", "read write"])
    }

    @Test func aResourceThatAsksAgainAfterTheStepUpGetsATypedErrorCarryingWhatItAsked() async throws {
        let world = FakeResourceWorld(.init(alwaysAsksFor: "admin"))
        let error = await oauth2Error { _ = try await client(world, identity: ClientIdentity(clientID: "pre-1")).send(get(resourceA)) }
        #expect(error?.code == .insufficientScope)
        #expect(error?.stepUp?.scopes == ["read", "admin"])
        #expect(world.authorizeQueries.count == 2)
    }

    @Test func insufficientUserAuthenticationReauthorizesWithAcrValues() async throws {
        let world = FakeResourceWorld(.init(requiredACR: ["a": "phr"]))
        let response = try await client(world, identity: ClientIdentity(clientID: "pre-1")).send(get(resourceA))
        #expect(response.status == 200)
        #expect(world.authorizeQueries.map { $0["acr_values"] } == [nil, "phr"])
    }

    @Test func reportModeThrowsAndTheAppFinishesTheStepUpItself() async throws {
        let world = FakeResourceWorld(.init(requiredScopes: ["a": ["read", "write"]]))
        let store = InMemoryTokenStore()
        let client = client(world, store: store, identity: ClientIdentity(clientID: "pre-1"), options: .init(stepUp: .report))
        let error = await oauth2Error { _ = try await client.send(get(resourceA)) }
        #expect(error?.code == .insufficientScope)
        let stepUp = try #require(error?.stepUp)
        #expect(stepUp.scopes == ["read", "write"])
        #expect(world.authorizeQueries.count == 1)

        let pending = try await client.authorizationURL(for: resourceA, stepUp: stepUp)
        _ = try await client.completeAuthorization(redirect: world.approve(pending), pending: pending)
        #expect(try await client.send(get(resourceA)).status == 200)
    }

    @Test func withoutAHandlerASignInIsAuthorizationRequiredThenTheAppCompletesIt() async throws {
        let world = FakeResourceWorld()
        let client = client(world, identity: ClientIdentity(clientID: "pre-1"), handler: false)
        let error = await oauth2Error { _ = try await client.send(get(resourceA)) }
        #expect(error?.code == .authorizationRequired)
        #expect(error?.stepUp?.resource == resourceA)
        let pending = try await client.authorizationURL(for: resourceA, stepUp: error?.stepUp, redirectURI: FakeResourceWorld.redirectURI)
        _ = try await client.completeAuthorization(redirect: world.approve(pending), pending: pending)
        #expect(try await client.send(get(resourceA)).status == 200)
    }

    // MARK: - Discovery order, registration forgotten

    @Test func mcpClientFallsBackToTheWellKnownURIWhenTheChallengeNamesNoMetadata() async throws {
        let world = FakeResourceWorld()
        let quiet = FakeResourceWorld.resourceURL("quiet")
        let response = try await client(world, identity: ClientIdentity(clientID: "pre-1")).send(get(quiet))
        #expect(response.status == 200)
        let wellKnown = world.transport.requests.map(\.url.absoluteString).filter { $0.contains("/.well-known/oauth-protected-resource") }
        #expect(wellKnown.first == "https://mcp.example/.well-known/oauth-protected-resource/quiet")
    }

    @Test func aRegistrationTheServerForgotIsDeletedAndMadeAgainOnce() async throws {
        let world = FakeResourceWorld()
        let store = InMemoryTokenStore()
        _ = try await client(world, store: store).send(get(resourceA))
        #expect(try await store.loadRegistration(issuer: FakeResourceWorld.issuer)?.clientID == "dyn-1")
        world.forget("dyn-1")
        try await FakeResourceWorld.expireAlicesToken(for: resourceA, in: store)

        let response = try await client(world, store: store).send(get(resourceA))
        #expect(response.status == 200)
        #expect(world.registrations == 2)
        #expect(try await store.loadRegistration(issuer: FakeResourceWorld.issuer)?.clientID == "dyn-2")
        #expect(world.authorizeQueries.map { $0["client_id"] } == ["dyn-1", "dyn-2"])
    }
}
