import Foundation
import OAuth2Testing
import Testing
@testable import OAuth2

/// A refresh's ID token arrives in the response that rotates the refresh
/// token: whatever its verification says, the rotated refresh token is kept.
/// One that cannot be verified at that moment is deferred (the new tokens are
/// used); one that names another user, audience or key is refused (the new
/// tokens are held, never used).
@Suite struct RefreshedIDTokenTests {
    typealias World = IDTokenVerificationTests.World
    static let tokenURL = IDTokenVerificationTests.tokenURL

    /// The provider's next refresh answer: new access and refresh tokens and `idToken`.
    static func enqueueRefresh(_ world: World, access: String, refresh: String, idToken: String) {
        world.transport.enqueue(
            json:
                #"{"access_token":"\#(access)","token_type":"Bearer","expires_in":3600,"refresh_token":"\#(refresh)","id_token":"\#(idToken)"}"#,
            for: tokenURL)
    }

    /// A signed-in account, its client, and the events it reports.
    static func signedIn(_ world: World) async throws -> (OAuth2Client, AsyncStream<OAuth2Event>) {
        let client = world.provider.client(account: "alice")
        let events = client.events
        _ = try await client.adopt(try await world.signIn { nonce in try world.idToken(nonce: nonce) })
        return (client, events)
    }

    /// The key the provider rotated to (kid `key-2`), which the key set does not have yet.
    static func rotatedKey() throws -> JWTSigningKey {
        try JWTSigningKey.rsa(pem: JOSEFixtures.otherRSAKey.pemRepresentation, keyID: "key-2")
    }

    /// A refresh (access-2, refresh-2) whose ID token the rotated key signed,
    /// made within the key set's refetch interval: its verification is deferred.
    static func refreshSignedByAKeyNotYetPublished(_ world: World, _ client: OAuth2Client) async throws -> JWTSigningKey {
        let newKey = try rotatedKey()
        enqueueRefresh(world, access: "access-2", refresh: "refresh-2", idToken: try world.idToken(nonce: nil, key: newKey))
        _ = try await client.refreshAccessToken()
        return newKey
    }

    static func tokenRequests(_ world: World) -> Int {
        world.transport.requests(for: tokenURL).count
    }

    @Test func aKeySetThatIsDownWhenANewKeySignsTheRefreshedIDTokenCostsNothing() async throws {
        let world = try World()
        let (client, events) = try await Self.signedIn(world)
        let signIn = try #require(try await client.idToken())

        // The provider rotated its signing key but the key set is down.
        let newKey = try Self.rotatedKey()
        world.served.withLock { $0.down = true }
        world.clock.advance(by: .seconds(31))
        let rotated = try world.idToken(nonce: nil, ["name": .string("Alice B.")], key: newKey)
        Self.enqueueRefresh(world, access: "access-2", refresh: "refresh-2", idToken: rotated)
        let refreshed = try await client.refreshAccessToken()

        // The rotated tokens are stored and used; the verified claims are the sign-in's.
        #expect(refreshed.accessToken == Secret("access-2"))
        let stored = try #require(try await world.store.load(account: "alice"))
        #expect(stored.refreshToken == Secret("refresh-2"))
        #expect(stored.idToken == signIn)
        #expect(stored.unverifiedIDToken?.isRefused == false)
        #expect(stored.unverifiedIDToken?.reason == .transportError)
        #expect(stored.rawIDToken?.value != rotated)
        #expect(try await client.token().accessToken == Secret("access-2"))
        var reported: OAuth2Error?
        for await event in events {
            if case .deferredIDTokenVerification(let error) = event {
                reported = error
                break
            }
        }
        #expect(reported?.code == .transportError)
        // While the keys are still down, the sign-in's claims are the answer.
        #expect(try await client.idToken() == signIn)

        // The keys come back: the next look verifies the deferred ID token.
        world.served.withLock {
            $0.down = false
            $0.keys = [world.signingKey, newKey]
        }
        world.clock.advance(by: .seconds(31))
        let verified = try #require(try await client.idToken())
        #expect(verified.name == "Alice B.")
        let after = try #require(try await world.store.load(account: "alice"))
        #expect(after.unverifiedIDToken == nil)
        #expect(after.idToken == verified)
        #expect(after.rawIDToken?.value == rotated)
        #expect(after.refreshToken == Secret("refresh-2"))
        #expect(Self.tokenRequests(world) == 2)
    }

    @Test func aKeyNotYetPublishedDefersAndTheNextRefreshVerifiesItsOwn() async throws {
        let world = try World()
        let (client, _) = try await Self.signedIn(world)
        let newKey = try Self.rotatedKey()
        // Within the refetch interval the set is not fetched again: unknown_signing_key.
        Self.enqueueRefresh(
            world, access: "access-2", refresh: "refresh-2", idToken: try world.idToken(nonce: nil, key: newKey))
        _ = try await client.refreshAccessToken()
        #expect(try await world.store.load(account: "alice")?.unverifiedIDToken?.reason == .unknownSigningKey)

        // The next refresh brings a verifiable one: it replaces the deferred one.
        world.served.withLock { $0.keys = [world.signingKey, newKey] }
        world.clock.advance(by: .seconds(31))
        Self.enqueueRefresh(
            world, access: "access-3", refresh: "refresh-3",
            idToken: try world.idToken(nonce: nil, ["name": .string("Alice C.")], key: newKey))
        let refreshed = try await client.refreshAccessToken()
        #expect(refreshed.unverifiedIDToken == nil)
        #expect(refreshed.idToken?.name == "Alice C.")
        #expect(try await world.store.load(account: "alice")?.refreshToken == Secret("refresh-3"))
    }

    @Test func aDeferredIDTokenIsCheckedAgainstTheTimesWhenItCame() async throws {
        let world = try World()
        let (client, _) = try await Self.signedIn(world)
        let newKey = try await Self.refreshSignedByAKeyNotYetPublished(world, client)
        // The ID token lived five minutes; the keys come back an hour later.
        world.served.withLock { $0.keys = [world.signingKey, newKey] }
        world.clock.advance(by: .seconds(3600))
        #expect(try await client.idToken()?.subject == "alice-123")
        #expect(try await world.store.load(account: "alice")?.unverifiedIDToken == nil)
    }

    @Test func aRefreshedIDTokenForAnotherUserIsRefusedAndItsTokensAreHeldNeverUsed() async throws {
        let world = try World()
        let (client, _) = try await Self.signedIn(world)
        let other = try world.idToken(nonce: nil, ["sub": .string("mallory-9")])
        Self.enqueueRefresh(world, access: "access-2", refresh: "refresh-2", idToken: other)
        let error = await #expect(throws: OAuth2Error.self) { _ = try await client.refreshAccessToken() }
        #expect(error?.code == .subjectMismatch)

        // The rotated refresh token is stored (a logout can revoke it)…
        let stored = try #require(try await world.store.load(account: "alice"))
        #expect(stored.refreshToken == Secret("refresh-2"))
        #expect(stored.unverifiedIDToken?.isRefused == true)
        #expect(stored.idToken?.subject == "alice-123")
        // …and never acts as alice: not here, not in another client, not by a refresh.
        let requestsBefore = world.transport.requests.count
        for candidate in [client, world.provider.client(account: "alice")] {
            let refused = await #expect(throws: OAuth2Error.self) { _ = try await candidate.token() }
            #expect(refused?.code == .subjectMismatch)
            let sent = await #expect(throws: OAuth2Error.self) {
                _ = try await candidate.send(HTTPTransportRequest(url: URL(string: "https://api.example/me")!))
            }
            #expect(sent?.code == .subjectMismatch)
            let again = await #expect(throws: OAuth2Error.self) { _ = try await candidate.refreshAccessToken() }
            #expect(again?.code == .subjectMismatch)
            let claims = await #expect(throws: OAuth2Error.self) { _ = try await candidate.idToken() }
            #expect(claims?.code == .subjectMismatch)
        }
        #expect(world.transport.requests.count == requestsBefore)

        // Signing in again replaces it.
        _ = try await client.adopt(try await world.signIn { nonce in try world.idToken(nonce: nonce) })
        #expect(try await client.token().unverifiedIDToken == nil)
    }

    @Test func aMismatchIsRefusedEvenWhileTheKeySetIsDown() async throws {
        let world = try World()
        let (client, _) = try await Self.signedIn(world)
        world.served.withLock { $0.down = true }
        world.clock.advance(by: .seconds(31))
        let newKey = try Self.rotatedKey()
        for (changes, code) in [
            (["sub": JSONValue?.some(.string("mallory-9"))], OAuth2Error.Code.subjectMismatch),
            (["iss": .string("https://evil.example")], .issuerMismatch),
            (["aud": .array([.string("app"), .string("other")]), "azp": .string("app")], .audienceMismatch),
        ] {
            Self.enqueueRefresh(
                world, access: "access-x", refresh: "refresh-x", idToken: try world.idToken(nonce: nil, changes, key: newKey))
            let error = await #expect(throws: OAuth2Error.self) { _ = try await client.refreshAccessToken() }
            #expect(error?.code == code)
            #expect(try await world.store.load(account: "alice")?.unverifiedIDToken?.isRefused == true)
            // Start again from a clean sign-in for the next case.
            world.served.withLock { $0.down = false }
            world.clock.advance(by: .seconds(31))
            _ = try await client.adopt(try await world.signIn { nonce in try world.idToken(nonce: nonce) })
            world.served.withLock { $0.down = true }
            world.clock.advance(by: .seconds(31))
        }
    }

    @Test func aDeferredIDTokenThatTurnsOutForgedIsRefusedWhenVerifiedAgain() async throws {
        let world = try World()
        let (client, _) = try await Self.signedIn(world)
        _ = try await Self.refreshSignedByAKeyNotYetPublished(world, client)
        // The provider publishes its real key-2, which is not the one that signed.
        let real = try JWTSigningKey.rsa(pem: JOSEFixtures.rsaKey.pemRepresentation, keyID: "key-2")
        world.served.withLock { $0.keys = [world.signingKey, real] }
        world.clock.advance(by: .seconds(31))
        let error = await #expect(throws: OAuth2Error.self) { _ = try await client.idToken() }
        #expect(error?.code == .invalidSignature)
        let stored = try #require(try await world.store.load(account: "alice"))
        #expect(stored.unverifiedIDToken?.isRefused == true)
        #expect(stored.refreshToken == Secret("refresh-2"))
        let refused = await #expect(throws: OAuth2Error.self) { _ = try await client.token() }
        #expect(refused?.code == .invalidSignature)
    }

    @Test func aRefreshedIDTokenMustKeepTheSignInsAudience() async throws {
        let world = try World()
        let (client, _) = try await Self.signedIn(world)
        let widened = try world.idToken(nonce: nil, ["aud": .array([.string("app"), .string("other")]), "azp": .string("app")])
        Self.enqueueRefresh(world, access: "access-2", refresh: "refresh-2", idToken: widened)
        let error = await #expect(throws: OAuth2Error.self) { _ = try await client.refreshAccessToken() }
        #expect(error?.code == .audienceMismatch)
    }

    @Test func neitherTheUnverifiedIDTokenNorItsClaimsShowInDescriptionsOrLogs() async throws {
        let world = try World()
        let (client, _) = try await Self.signedIn(world)
        let newKey = try Self.rotatedKey()
        let rotated = try world.idToken(nonce: nil, ["email": .string("secret-alice@example.com")], key: newKey)
        Self.enqueueRefresh(world, access: "access-2", refresh: "refresh-2", idToken: rotated)
        let token = try await client.refreshAccessToken()
        var dumped = ""
        dump(token, to: &dumped)
        let unverified = try #require(token.unverifiedIDToken)
        let payload = String(rotated.split(separator: ".")[1])
        for text in world.logs.all + [String(describing: token), String(describing: unverified), dumped] {
            #expect(!text.contains(payload))
            #expect(!text.contains("secret-alice"))
        }
    }
}
