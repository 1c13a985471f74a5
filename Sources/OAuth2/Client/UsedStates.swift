#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The `state` values of authorizations already used, so a redirect cannot be
/// replayed: a state is used once.
///
/// Shared by every client of an ``OAuth2Provider``, so a server that finishes
/// flows on per-request clients still refuses a replay. Bounded: the oldest
/// entries are forgotten first; by then the provider has expired the code.
final class UsedStates: Sendable {
    private struct Entries {
        var set: Set<String> = []
        var order: [String] = []
        var head = 0
    }

    private let entries = LockedValue(Entries())
    private let limit: Int

    init(limit: Int = 10_000) {
        self.limit = limit
    }

    /// Marks `state` used. Returns `false` when it was used before.
    func consume(_ state: String) -> Bool {
        entries.withLock { entries in
            guard entries.set.insert(state).inserted else { return false }
            entries.order.append(state)
            if entries.order.count - entries.head > limit {
                entries.set.remove(entries.order[entries.head])
                entries.head += 1
                if entries.head > limit {
                    entries.order.removeFirst(entries.head)
                    entries.head = 0
                }
            }
            return true
        }
    }
}
