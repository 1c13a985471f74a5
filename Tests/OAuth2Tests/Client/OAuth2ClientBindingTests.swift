import Foundation
import OAuth2
import OAuth2Testing
import Testing

/// A stored token belongs to the provider and client that issued it, and is
/// never sent anywhere else.
@Suite struct OAuth2ClientBindingTests {
    private static let otherProvider = TokenBinding(tokenEndpoint: "https://other-idp.example/token", clientID: "client-1")
    private static let otherClient = TokenBinding(tokenEndpoint: Fixture.tokenURL.absoluteString, clientID: "another-client")

    private func seed(_ harness: ClientHarness, binding: TokenBinding?, expiresIn: TimeInterval) async throws {
        var token = Fixture.token(expiresAt: harness.clock.now().addingTimeInterval(expiresIn))
        token.binding = binding
        try await harness.store.save(token, account: "alice")
    }

    @Test(arguments: [otherProvider, otherClient])
    func anotherProvidersOrClientsTokenIsNeverSent(binding: TokenBinding) async throws {
        let harness = try ClientHarness()
        try await seed(harness, binding: binding, expiresIn: 3600)

        let error = await oauth2Error { _ = try await harness.client().send(HTTPTransportRequest(url: Fixture.apiURL)) }

        #expect(error?.code == .providerMismatch)
        #expect(error?.message.contains(binding.clientID) == true)
        #expect(error?.message.contains("client-1") == true)
        #expect(harness.transport.requests.isEmpty)
    }

    @Test func anotherProvidersExpiredTokenIsNeverRefreshed() async throws {
        let harness = try ClientHarness()
        try await seed(harness, binding: Self.otherProvider, expiresIn: -10)

        let error = await oauth2Error { try await harness.client().refreshAccessToken() }

        #expect(error?.code == .providerMismatch)
        #expect(harness.transport.requests.isEmpty)
        #expect(try await harness.store.load(account: "alice")?.binding == Self.otherProvider)
    }

    @Test func logoutNeitherRevokesNorDeletesAnotherProvidersToken() async throws {
        let harness = try ClientHarness()
        try await seed(harness, binding: Self.otherProvider, expiresIn: 3600)

        let error = await oauth2Error { try await harness.client().logout() }

        #expect(error?.code == .providerMismatch)
        #expect(harness.transport.requests.isEmpty)
        #expect(try await harness.store.load(account: "alice") != nil)
    }

    @Test func aTokenStoredWithoutABindingIsStampedOnceByAConfigurationThatAdoptsSuchTokens() async throws {
        var configuration = try Fixture.configuration()
        configuration.adoptsTokensStoredWithoutBinding = true
        let harness = try ClientHarness(configuration: configuration)
        try await seed(harness, binding: nil, expiresIn: 3600)
        harness.transport.enqueue(HTTPTransportResponse(status: 200), for: Fixture.apiURL)
        harness.transport.enqueue(HTTPTransportResponse(status: 200), for: Fixture.apiURL)
        let savesBefore = harness.store.saveCount

        _ = try await harness.client().send(HTTPTransportRequest(url: Fixture.apiURL))
        _ = try await harness.client().send(HTTPTransportRequest(url: Fixture.apiURL))

        #expect(try await harness.store.load(account: "alice")?.binding == harness.provider.configuration.binding)
        #expect(harness.store.saveCount == savesBefore + 1)
    }

    /// Provider B must not adopt provider A's token because B happened to
    /// read it first. (A persistent store: the flaky one in front of memory.)
    @Test func aTokenStoredWithoutABindingIsNeverSentRefreshedOrDeletedByDefault() async throws {
        let harness = try ClientHarness { FlakyTokenStore($0) }
        try await seed(harness, binding: nil, expiresIn: -10)
        let savesBefore = harness.store.saveCount

        let sent = await oauth2Error { _ = try await harness.client().send(HTTPTransportRequest(url: Fixture.apiURL)) }
        let refreshed = await oauth2Error { try await harness.client().refreshAccessToken() }
        let loggedOut = await oauth2Error { try await harness.client().logout() }

        #expect(sent?.code == .providerMismatch)
        #expect(sent?.message.contains("adoptsTokensStoredWithoutBinding") == true)
        #expect(refreshed?.code == .providerMismatch)
        #expect(loggedOut?.code == .providerMismatch)
        #expect(harness.transport.requests.isEmpty)
        #expect(harness.store.saveCount == savesBefore)
        #expect(try await harness.store.load(account: "alice")?.binding == nil)
    }

    @Test func everyTokenTheClientObtainsCarriesItsBinding() async throws {
        let harness = try ClientHarness()
        harness.transport.enqueue(json: Fixture.tokenJSON(), for: Fixture.tokenURL)

        let token = try await harness.client("service").authenticate(.clientCredentials)

        let expected = TokenBinding(tokenEndpoint: Fixture.tokenURL.absoluteString, clientID: "client-1")
        #expect(token.binding == expected)
        #expect(try await harness.store.load(account: "service")?.binding == expected)
    }

}
