#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

extension ClientRecordStore {
    /// What was discovered about the resource at `url`, or `nil`.
    ///
    /// - Throws: `store_error` when the record is there but cannot be decoded.
    public func loadDiscoveredResource(_ url: URL) async throws(OAuth2Error) -> DiscoveredResource? {
        try await loadDecoded(DiscoveredResource.self, .resource(url))
    }

    /// Keeps what was discovered about a resource, under its requested URL.
    public func saveDiscoveredResource(_ resource: DiscoveredResource) async throws(OAuth2Error) {
        try await saveEncoded(resource, .resource(resource.requestedURL))
    }
}
