import Foundation
#if canImport(Glibc)
import Glibc
#endif
import OAuth2
import OAuth2Testing
import Testing

@Suite struct OAuth2ClientRevocationTests {
    @Test func revokeRevokesRefreshThenAccessTokenAndDeletesLocally() async throws {
        let harness = try ClientHarness()
        try await harness.seed(expiresIn: 3600)
        harness.transport.enqueue(HTTPTransportResponse(status: 200), for: Fixture.revokeURL)
        harness.transport.enqueue(HTTPTransportResponse(status: 200), for: Fixture.revokeURL)
        let delegate = RecordingDelegate()
        let client = harness.client(delegate: delegate)
        try await client.revoke()
        let revocations = harness.transport.requests(for: Fixture.revokeURL).map { Fixture.formFields($0.body) }
        #expect(revocations.map { $0["token"] } == [Fixture.refreshToken, Fixture.accessToken])
        #expect(revocations.map { $0["token_type_hint"] } == ["refresh_token", "access_token"])
        #expect(try await harness.store.load(account: "alice") == nil)
        #expect(delegate.events == [.lostAccessToken(nil)])
    }

    @Test func revokeDeletesLocallyEvenWhenTheProviderFails() async throws {
        let harness = try ClientHarness()
        try await harness.seed(expiresIn: 3600)
        harness.transport.enqueue(HTTPTransportResponse(status: 503), for: Fixture.revokeURL)
        harness.transport.enqueue(error: HTTPTransportError.connectFailed, for: Fixture.revokeURL)
        let error = await oauth2Error { try await harness.client().revoke() }
        #expect(error?.code == .httpError)
        #expect(try await harness.store.load(account: "alice") == nil)
    }

    @Test func logoutIgnoresTheProviderButNotTheStore() async throws {
        let harness = try ClientHarness()
        try await harness.seed(expiresIn: 3600)
        harness.transport.enqueue(json: "{\"error\":\"unsupported_token_type\"}", status: 400, for: Fixture.revokeURL)
        harness.transport.enqueue(json: "{\"error\":\"unsupported_token_type\"}", status: 400, for: Fixture.revokeURL)
        let client = harness.client()
        try await client.logout()
        #expect(try await harness.store.load(account: "alice") == nil)
        let after = await oauth2Error { _ = try await client.send(HTTPTransportRequest(url: Fixture.apiURL)) }
        #expect(after?.code == .notAuthenticated)
    }

    @Test func revokeWithoutATokenIsNotAuthenticated() async throws {
        let harness = try ClientHarness()
        let error = await oauth2Error { try await harness.client().revoke() }
        #expect(error?.code == .notAuthenticated)
        #expect(harness.transport.requests.isEmpty)
    }

    @Test(arguments: ["damaged", "open to others"])
    func anUnreadableTokenIsDeletedAndTheErrorSaysItWasNotRevoked(problem: String) async throws {
        let scratch = try ScratchDirectory()
        let store = try FileTokenStore(directory: scratch.storePath)
        let transport = CannedTransport()
        let provider = try OAuth2Provider(configuration: Fixture.configuration(), store: store, transport: transport, clock: ManualClock())
        try await store.save(Fixture.token(expiresAt: nil), account: "alice")
        let file = try scratch.storeFile("alice")
        if problem == "damaged" {
            try StoreFixtures.write(Array("{not json".utf8), to: file)
        } else {
            #expect(chmod(file, 0o644) == 0)
        }

        let revoke = await oauth2Error { try await provider.client(account: "alice").revoke() }
        try await store.save(Fixture.token(expiresAt: nil), account: "bob")
        let bobFile = try scratch.storeFile("bob")
        if problem == "damaged" {
            try StoreFixtures.write(Array("{not json".utf8), to: bobFile)
        } else {
            #expect(chmod(bobFile, 0o644) == 0)
        }
        let logout = await oauth2Error { try await provider.client(account: "bob").logout() }

        for error in [revoke, logout] {
            #expect(error?.code == .storeError)
            #expect(error?.message.contains("could not be revoked at the provider") == true, "\(error?.message ?? "")")
        }
        #expect(!FileManager.default.fileExists(atPath: file))
        #expect(!FileManager.default.fileExists(atPath: bobFile))
        #expect(transport.requests.isEmpty)
    }
}
