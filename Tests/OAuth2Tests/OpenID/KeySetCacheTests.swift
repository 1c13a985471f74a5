import Foundation
import OAuth2Testing
import Testing

@testable import OAuth2

/// When the key set cache fetches: requests to a canned JWKS endpoint,
/// counted, with a manual clock.
@Suite struct KeySetCacheTests {
    static let jwksURL = URL(string: "https://id.example/jwks")!

    /// A cache over an endpoint that serves one key, or is down.
    struct World {
        let transport = CannedTransport()
        let clock = ManualClock()
        let down = LockedValue(false)
        let cache: KeySetCache
        let jws: CompactJWS

        init(maxAge: Duration, refetchInterval: Duration) throws {
            let key = try JWTSigningKey.rsa(pem: JOSEFixtures.rsaKey.pemRepresentation, keyID: "key-1")
            jws = try CompactJWS(try JWT.sign(claims: ["sub": .string("alice")], key: key).value)
            cache = KeySetCache(
                settings: OpenIDSettings(jwksURI: KeySetCacheTests.jwksURL, keySetMaxAge: maxAge, keySetRefetchInterval: refetchInterval),
                transport: transport, clock: clock, timeout: .seconds(10), maxSize: 1 << 20)
            let down = self.down
            let body = try JSONEncoder().encode(JSONValue.object(["keys": .array([.object(try #require(key.publicJWK))])]))
            transport.respond { _ in
                if down.withLock({ $0 }) { throw HTTPTransportError.connectFailed }
                return HTTPTransportResponse(status: 200, headers: [.contentType: "application/json"], body: body)
            }
        }

        var fetches: Int { transport.requests(for: KeySetCacheTests.jwksURL).count }

        /// The error of verifying the token, or `nil` when it verified.
        func verifyError() async -> OAuth2Error? {
            do {
                _ = try await cache.verify(jws, allowedAlgorithms: [.rs256])
                return nil
            } catch {
                return error
            }
        }
    }

    @Test func anExpiredSetIsFetchedAgainAtMostOncePerIntervalWhileTheEndpointIsDown() async throws {
        let world = try World(maxAge: .seconds(600), refetchInterval: .seconds(30))
        #expect(await world.verifyError() == nil)
        #expect(world.fetches == 1)

        world.down.withLock { $0 = true }
        world.clock.advance(by: .seconds(601))
        #expect(await world.verifyError()?.code == .transportError)
        #expect(world.fetches == 2)
        // Within the interval every token fails with that failure, without a
        // request, and the expired set is not trusted meanwhile.
        for _ in 0..<20 {
            world.clock.advance(by: .seconds(1))
            #expect(await world.verifyError()?.code == .transportError)
        }
        #expect(world.fetches == 2)
        world.clock.advance(by: .seconds(10))
        #expect(await world.verifyError()?.code == .transportError)
        #expect(world.fetches == 3)

        // Back up: the next fetch waits for the interval too, then the set is used again.
        world.down.withLock { $0 = false }
        world.clock.advance(by: .seconds(10))
        #expect(await world.verifyError()?.code == .transportError)
        #expect(world.fetches == 3)
        world.clock.advance(by: .seconds(21))
        #expect(await world.verifyError() == nil)
        #expect(world.fetches == 4)
        #expect(await world.verifyError() == nil)
        #expect(world.fetches == 4)
    }

    @Test func anExpiredSetIsFetchedAgainAtOnceAfterAFetchThatWorked() async throws {
        // A max age shorter than the interval: the set is fetched again when it expires.
        let world = try World(maxAge: .seconds(10), refetchInterval: .seconds(30))
        #expect(await world.verifyError() == nil)
        world.clock.advance(by: .seconds(11))
        #expect(await world.verifyError() == nil)
        #expect(world.fetches == 2)
        #expect(await world.verifyError() == nil)
        #expect(world.fetches == 2)
    }
}
