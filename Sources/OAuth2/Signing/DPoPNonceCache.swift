#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The latest DPoP nonce each origin gave (RFC 9449 §8, §9): a token
/// endpoint's and each resource server's, keyed by origin (`scheme://host:port`,
/// lower-cased, the default port left out), so a proof carries the nonce of
/// the server it goes to and no other.
///
/// Every `DPoP-Nonce` response header replaces its origin's nonce. Bounded:
/// past ``capacity`` origins the least recently updated one is forgotten,
/// which costs at most one `use_dpop_nonce` round trip later. A nonce is not a
/// secret (servers send it in the clear to anyone), but it is kept out of
/// descriptions all the same.
package final class DPoPNonceCache: Sendable {
    /// How many origins are remembered.
    package let capacity: Int
    private let state: LockedValue<State>

    private struct State {
        var nonces: [String: Entry] = [:]
        var clock: UInt64 = 0
    }

    private struct Entry {
        var nonce: String
        var updated: UInt64
    }

    package init(capacity: Int = 64) {
        self.capacity = max(1, capacity)
        state = LockedValue(State())
    }

    /// The nonce the origin of `url` last gave, if any.
    package func nonce(for url: String) -> String? {
        guard let origin = Self.origin(of: url) else { return nil }
        return state.withLock { $0.nonces[origin]?.nonce }
    }

    /// Records the nonce the origin of `url` gave; an empty or oversized
    /// nonce (over 1,024 bytes) is ignored.
    package func update(_ nonce: String, for url: String) {
        guard !nonce.isEmpty, nonce.utf8.count <= 1024, let origin = Self.origin(of: url) else { return }
        let capacity = self.capacity
        state.withLock { state in
            state.clock &+= 1
            state.nonces[origin] = Entry(nonce: nonce, updated: state.clock)
            if state.nonces.count > capacity, let oldest = state.nonces.min(by: { $0.value.updated < $1.value.updated })?.key {
                state.nonces[oldest] = nil
            }
        }
    }

    /// Every origin's nonce, the least recently updated first: what a
    /// process that starts often (the CLI) keeps between runs, so that its
    /// next run's first proof carries the nonce instead of paying a
    /// `use_dpop_nonce` round trip. Given back to ``update(_:for:)`` in this
    /// order (an origin is a URL), the same origins stay the most recent.
    package var entries: [(origin: String, nonce: String)] {
        state.withLock { state in
            state.nonces.sorted { $0.value.updated < $1.value.updated }.map { (origin: $0.key, nonce: $0.value.nonce) }
        }
    }

    /// `scheme://host[:port]` of an absolute http(s) URL, lower-cased, with
    /// the scheme's default port left out; nil for anything else.
    package static func origin(of url: String) -> String? {
        URLParts(Substring(url))?.normalizedHTTPOrigin
    }
}

/// A ``TokenSource`` whose DPoP nonces live beyond one ``SigningTransport``:
/// ``OAuth2Client``, whose provider keeps them for its token endpoint and all
/// its clients.
package protocol DPoPNonceSharing {
    /// The cache a signing transport over this source keeps nonces in.
    var dpopNonces: DPoPNonceCache { get }
}
