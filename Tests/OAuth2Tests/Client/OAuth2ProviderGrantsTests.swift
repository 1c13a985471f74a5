import Foundation
import OAuth2
import OAuth2Testing
import Testing

/// Grants that run before anyone knows whose token it is, and adopting their
/// token as an account's.
@Suite struct OAuth2ProviderGrantsTests {
    @Test func aGrantWithoutAnAccountReturnsABoundTokenAndStoresNothing() async throws {
        let harness = try ClientHarness()
        harness.transport.enqueue(json: Fixture.tokenJSON(access: "cc-1", refresh: nil), for: Fixture.tokenURL)

        let token = try await harness.provider.token(for: .clientCredentials(scopes: ["read"]))

        #expect(token.accessToken.value == "cc-1")
        #expect(token.binding == harness.provider.configuration.binding)
        #expect(token.grant == TokenGrant(type: "client_credentials", scopes: ["read"]))
        #expect(harness.store.saveCount == 0)
    }

    @Test func aPublicClientIsRefusedTheClientCredentialsGrant() async throws {
        let configuration = try OAuth2Configuration(clientID: "public-1", tokenEndpoint: Fixture.tokenURL)
        let harness = try ClientHarness(configuration: configuration)

        let error = await oauth2Error { _ = try await harness.provider.token(for: .clientCredentials) }
        let clientError = await oauth2Error { _ = try await harness.client("service").authenticate(.clientCredentials) }

        #expect(error?.code == .invalidConfiguration)
        #expect(clientError?.code == .invalidConfiguration)
        #expect(harness.transport.requests.isEmpty)
    }

    @Test func theCodeExchangeWithoutAnAccountValidatesAndReturnsTheToken() async throws {
        let harness = try ClientHarness()
        let pending = try await harness.provider.authorizationURL(redirectURI: Fixture.redirectURI)
        let redirect = "\(Fixture.redirectURI.absoluteString)?code=the-code&state=\(pending.state)"
        harness.transport.enqueue(json: Fixture.tokenJSON(), for: Fixture.tokenURL)

        let token = try await harness.provider.token(for: .authorizationCode(redirect: redirect, pending: pending))

        #expect(token.accessToken.value == Fixture.accessToken)
        #expect(token.grant?.type == "authorization_code")
        #expect(Fixture.formFields(harness.tokenRequests.first?.body)["code"] == "the-code")
        #expect(harness.store.saveCount == 0)
        let replay = await oauth2Error {
            _ = try await harness.provider.token(for: .authorizationCode(redirect: redirect, pending: pending))
        }
        #expect(replay?.code == .stateMismatch)
        #expect(harness.tokenRequests.count == 1)
    }

    @Test func theProviderRefusesAnAuthorizationCodeWithoutItsPendingAuthorization() async throws {
        let harness = try ClientHarness()
        let pending = try await harness.provider.authorizationURL(redirectURI: Fixture.redirectURI)
        let redirect = "\(Fixture.redirectURI.absoluteString)?code=the-code&state=\(pending.state)"

        let error = await oauth2Error { _ = try await harness.provider.token(for: .authorizationCode(redirect: redirect)) }

        #expect(error?.code == .stateMismatch)
        #expect(harness.transport.requests.isEmpty)
    }

    @Test func adoptMakesItTheAccountsTokenAndReturnsThePreviousOne() async throws {
        let harness = try ClientHarness()
        try await harness.seed("user:alice", access: "at-old", refresh: "rt-old", expiresIn: 3600)
        harness.transport.enqueue(json: Fixture.tokenJSON(access: "at-new", refresh: "rt-new"), for: Fixture.tokenURL)
        let token = try await harness.provider.token(for: .clientCredentials)
        let delegate = RecordingDelegate()
        let client = harness.client("user:alice", delegate: delegate)

        let previous = try await client.adopt(token)

        #expect(previous?.accessToken.value == "at-old")
        #expect(try await harness.store.load(account: "user:alice")?.accessToken.value == "at-new")
        #expect(client.currentToken?.accessToken.value == "at-new")
        #expect(delegate.events == [.gotAccessToken(token)])
        #expect(try await client.adopt(token) == nil, "adopting the same token again replaces nothing")
    }

    @Test func adoptRefusesAnotherProvidersToken() async throws {
        let harness = try ClientHarness()
        var foreign = Fixture.token(expiresAt: nil)
        foreign.binding = TokenBinding(tokenEndpoint: "https://other-idp.example/token", clientID: "client-1")

        let error = await oauth2Error { _ = try await harness.client().adopt(foreign) }

        #expect(error?.code == .providerMismatch)
        #expect(harness.store.saveCount == 0)
    }

    @Test func adoptWaitsForTheAccountLock() async throws {
        let harness = try ClientHarness()
        let holder = try await AccountLockHolder.hold(harness.store, account: "alice")
        let client = harness.client()
        let adopting = Task { try await client.adopt(Fixture.token(access: "at-adopted", expiresAt: nil)) }

        try await Task.sleep(for: .milliseconds(100))
        #expect(harness.store.saveCount == 0)
        try await holder.release()
        _ = try await adopting.value

        #expect(try await harness.store.load(account: "alice")?.accessToken.value == "at-adopted")
    }

    @Test func revokingATokenWithoutAnAccountRevokesTheRefreshTokenFirst() async throws {
        let harness = try ClientHarness()
        harness.transport.enqueue(HTTPTransportResponse(status: 200), for: Fixture.revokeURL)
        harness.transport.enqueue(HTTPTransportResponse(status: 200), for: Fixture.revokeURL)

        try await harness.provider.revoke(Fixture.token(access: "at-x", refresh: "rt-x", expiresAt: nil))

        let revoked = harness.transport.requests(for: Fixture.revokeURL).map { Fixture.formFields($0.body) }
        #expect(revoked.map { $0["token"] } == ["rt-x", "at-x"])
        #expect(revoked.map { $0["token_type_hint"] } == ["refresh_token", "access_token"])
    }

    @Test(arguments: [429, 503])
    func aRevocationEndpointAskingToWaitSaysHowLong(status: HTTPResponse.Status) async throws {
        let harness = try ClientHarness()
        harness.transport.enqueue(HTTPTransportResponse(status: status, headers: [.retryAfter: "30"]), for: Fixture.revokeURL)
        harness.transport.enqueue(HTTPTransportResponse(status: 200), for: Fixture.revokeURL)

        let error = await oauth2Error { try await harness.provider.revoke(Fixture.token(access: "at-x", refresh: "rt-x", expiresAt: nil)) }

        #expect(error?.code == (status == 429 ? .rateLimited : .httpError))
        #expect(error?.retryAfter == .seconds(30))
        #expect(error?.message.hasSuffix("retry after 30 s") == true, "\(error?.message ?? "")")
    }

    @Test func revokingAnotherProvidersTokenSendsNothing() async throws {
        let harness = try ClientHarness()
        var foreign = Fixture.token(expiresAt: nil)
        foreign.binding = TokenBinding(tokenEndpoint: "https://other-idp.example/token", clientID: "client-1")

        let error = await oauth2Error { try await harness.provider.revoke(foreign) }

        #expect(error?.code == .providerMismatch)
        #expect(harness.transport.requests.isEmpty)
    }

    @Test func aBareTokenSignsARequestAndIsNeverRefreshed() async throws {
        let harness = try ClientHarness()
        harness.transport.enqueue(HTTPTransportResponse(status: 401), for: Fixture.apiURL)
        let token = Fixture.token(access: "at-bare", expiresAt: nil)

        let error = await oauth2Error {
            _ = try await SigningTransport(wrapping: harness.transport, tokenSource: token).send(HTTPTransportRequest(url: Fixture.apiURL))
        }

        #expect(error?.code == .invalidToken)
        #expect(harness.transport.requests.map(\.authorization) == ["Bearer at-bare"])
        #expect(harness.tokenRequests.isEmpty)
    }
}
