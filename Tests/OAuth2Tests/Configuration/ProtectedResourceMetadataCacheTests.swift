import Foundation
import OAuth2Testing
import Testing
@testable import OAuth2

@Suite struct ProtectedResourceMetadataCacheTests {
    private let document = #"{"resource": "https://mcp.example/api", "authorization_servers": ["https://as.example"]}"#
    private let api = URL(string: "https://mcp.example/api")!

    @Test func aSecondCallWithinTheLifetimeFetchesNothing() async throws {
        let transport = CannedTransport()
        transport.enqueue(json: document)
        let cache = ProtectedResourceMetadataCache(transport: transport, clock: ManualClock())
        let first = try await cache.metadata(for: api)
        let second = try await cache.metadata(for: URL(string: "https://MCP.example:443/api?page=2")!)
        #expect(first == second)
        #expect(transport.requests.count == 1)
    }

    @Test func anEntryOlderThanTheLifetimeIsFetchedAgain() async throws {
        let transport = CannedTransport()
        transport.enqueue(json: document)
        transport.enqueue(json: document)
        let clock = ManualClock()
        let cache = ProtectedResourceMetadataCache(transport: transport, rules: DiscoveryRules(cacheLifetime: .seconds(60)), clock: clock)
        _ = try await cache.metadata(for: api)
        clock.advance(by: .seconds(59))
        _ = try await cache.metadata(for: api)
        #expect(transport.requests.count == 1)
        clock.advance(by: .seconds(1))
        _ = try await cache.metadata(for: api)
        #expect(transport.requests.count == 2)
    }

    @Test func aFailedFetchIsNotCached() async throws {
        let transport = CannedTransport()
        transport.enqueue(json: "{}", status: 500)
        transport.enqueue(json: document)
        let cache = ProtectedResourceMetadataCache(transport: transport, clock: ManualClock())
        await #expect(throws: OAuth2Error.self) { _ = try await cache.metadata(for: api) }
        _ = try await cache.metadata(for: api)
        _ = try await cache.metadata(for: api)
        #expect(transport.requests.count == 2)
    }

    @Test func anotherMetadataURLFetchesAgainAndTheSameOneDoesNot() async throws {
        let transport = CannedTransport()
        transport.respond { _ in
            HTTPTransportResponse(status: 200, headers: [.contentType: "application/json"], body: Data(self.document.utf8))
        }
        let cache = ProtectedResourceMetadataCache(transport: transport, clock: ManualClock())
        let prm = URL(string: "https://mcp.example/prm")!
        _ = try await cache.metadata(for: api, metadataURL: prm)
        _ = try await cache.metadata(for: api, metadataURL: prm)
        _ = try await cache.metadata(for: api)
        #expect(transport.requests.count == 1)
        _ = try await cache.metadata(for: api, metadataURL: URL(string: "https://mcp.example/prm2")!)
        #expect(transport.requests.count == 2)
    }

    @Test func removeForgetsOneResourceAndRemoveAllEvery() async throws {
        let transport = CannedTransport()
        transport.respond { request in
            let resource = request.url.path.hasSuffix("/other") ? "https://mcp.example/other" : "https://mcp.example/api"
            let body = #"{"resource": "\#(resource)", "authorization_servers": ["https://as.example"]}"#
            return HTTPTransportResponse(status: 200, headers: [.contentType: "application/json"], body: Data(body.utf8))
        }
        let cache = ProtectedResourceMetadataCache(transport: transport, clock: ManualClock())
        let other = URL(string: "https://mcp.example/other")!
        _ = try await cache.metadata(for: api)
        _ = try await cache.metadata(for: other)
        cache.remove(for: api)
        _ = try await cache.metadata(for: api)
        _ = try await cache.metadata(for: other)
        #expect(transport.requests.count == 3)
        cache.removeAll()
        _ = try await cache.metadata(for: other)
        #expect(transport.requests.count == 4)
    }
}
