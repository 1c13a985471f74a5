#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// Protected resources' metadata (RFC 9728), kept for
/// ``DiscoveryRules/cacheLifetime`` so that calls to one resource read it once.
///
/// Entries are keyed by the requested URL's origin and path (its query and
/// fragment left out: they are the request's, not the resource's). A call
/// that names a `metadataURL` other than the one an entry was read from
/// fetches again. A failed fetch is not cached: the next call tries again.
/// Thread-safe; one per app or per ``ProtectedResourceClient``.
public final class ProtectedResourceMetadataCache: Sendable {
    /// The transport documents are fetched through.
    public let transport: any HTTPTransport
    /// The rules every fetch is held to; their ``DiscoveryRules/cacheLifetime`` is how long an entry is used.
    public let rules: DiscoveryRules
    private let clock: any OAuth2Clock
    private let entries = LockedValue<[String: Entry]>([:])

    private struct Entry: Sendable {
        var metadata: ProtectedResourceMetadata
        var metadataURL: URL?
        var fetchedAt: Date
    }

    /// Creates an empty cache.
    ///
    /// - Parameters:
    ///   - transport: typically the app's one ``CurlTransport``.
    ///   - rules: the rules of ``ProtectedResourceMetadata/fetch(for:metadataURL:rules:transport:)``.
    ///   - clock: where an entry's age is read from.
    public init(transport: any HTTPTransport, rules: DiscoveryRules = DiscoveryRules(), clock: any OAuth2Clock = SystemClock()) {
        self.transport = transport
        self.rules = rules
        self.clock = clock
    }

    /// The metadata of the resource at `requestedURL`, from the cache while it
    /// is younger than the rules' lifetime, else fetched and checked by
    /// ``ProtectedResourceMetadata/fetch(for:metadataURL:rules:transport:)``.
    ///
    /// - Parameters:
    ///   - requestedURL: the URL the app asked for.
    ///   - metadataURL: a challenge's `resource_metadata`, when the resource sent one.
    /// - Throws: what ``ProtectedResourceMetadata/fetch(for:metadataURL:rules:transport:)`` throws.
    public func metadata(for requestedURL: URL, metadataURL: URL? = nil) async throws(OAuth2Error) -> ProtectedResourceMetadata {
        let key = Self.key(requestedURL)
        let now = clock.now()
        if let key, let entry = entries.withLock({ $0[key] }), metadataURL == nil || metadataURL == entry.metadataURL,
            now >= entry.fetchedAt, now.timeIntervalSince(entry.fetchedAt) < rules.cacheLifetime.timeInterval
        {
            return entry.metadata
        }
        let metadata = try await ProtectedResourceMetadata.fetch(
            for: requestedURL, metadataURL: metadataURL, rules: rules, transport: transport
        )
        if let key {
            entries.withLock { $0[key] = Entry(metadata: metadata, metadataURL: metadataURL, fetchedAt: clock.now()) }
        }
        return metadata
    }

    /// Forgets the entry of the resource at `requestedURL`, so the next call fetches again
    /// (after the resource refused a token that its metadata led to, say).
    public func remove(for requestedURL: URL) {
        guard let key = Self.key(requestedURL) else { return }
        _ = entries.withLock { $0.removeValue(forKey: key) }
    }

    /// Forgets every entry.
    public func removeAll() {
        entries.withLock { $0.removeAll() }
    }

    /// `scheme://host:port/path`, scheme and host lower-cased, the default
    /// port filled in; `nil` for a URL that is not `http(s)` with a host (which fetch refuses).
    static func key(_ url: URL) -> String? {
        guard let parts = URLParts(url.absoluteString[...]), let origin = ProtectedResourceMetadata.Origin(parts) else { return nil }
        return "\(origin.scheme)://\(origin.host):\(origin.port)\(parts.path)"
    }
}
