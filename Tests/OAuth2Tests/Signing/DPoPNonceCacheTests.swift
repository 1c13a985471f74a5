@testable import OAuth2
import Testing

@Suite struct DPoPNonceCacheTests {
    @Test func entriesListEveryOriginsNonceLeastRecentlyUpdatedFirst() {
        let cache = DPoPNonceCache()
        cache.update("n-token", for: "https://idp.example/token")
        cache.update("n-api", for: "https://API.example:8443/v1/things?q=1")
        cache.update("n-token-2", for: "https://idp.example/other")

        let entries = cache.entries

        #expect(entries.map(\.origin) == ["https://api.example:8443", "https://idp.example"])
        #expect(entries.map(\.nonce) == ["n-api", "n-token-2"])
    }

    @Test func entriesGivenBackToAnotherCacheRestoreItsNoncesAndTheirOrder() {
        let first = DPoPNonceCache(capacity: 2)
        first.update("a", for: "https://a.example/x")
        first.update("b", for: "https://b.example/y")

        let second = DPoPNonceCache(capacity: 2)
        for entry in first.entries { second.update(entry.nonce, for: entry.origin) }
        // A third origin forgets the least recently updated, as it would have in the first cache.
        second.update("c", for: "https://c.example/z")

        #expect(second.nonce(for: "https://b.example/later") == "b")
        #expect(second.nonce(for: "https://c.example/") == "c")
        #expect(second.nonce(for: "https://a.example/x") == nil)
    }
}
