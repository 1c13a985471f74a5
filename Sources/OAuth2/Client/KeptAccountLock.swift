#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// An account's store lock that the provider's ``AccountVault`` keeps after
/// its body left a token the store could not save, until that token is saved.
///
/// Released, the lock would let another process (or another provider on the
/// same store) read the older token the store still holds and spend its
/// refresh token, which the provider has already rotated: `invalid_grant`,
/// and with reuse detection the loss of the grant. Kept, the others wait
/// (and time out) instead. The provider's own work on the account meanwhile
/// runs here, one job at a time, under the kept lock.
final class KeptAccountLock: Sendable {
    private struct State: Sendable {
        var jobs: [@Sendable () async -> Void] = []
        /// No job is taken any more: the lock is being released.
        var closed = false
        /// The keeper, parked until a job comes or its timer ends.
        var waiter: CheckedContinuation<Void, Never>?
    }

    private let state = LockedValue(State())

    /// Queues `job` to run under the kept lock.
    ///
    /// - Returns: `false` when the lock is no longer kept: the caller takes the store's lock itself.
    func enqueue(_ job: @escaping @Sendable () async -> Void) -> Bool {
        let queued = state.withLock { state -> Bool in
            guard !state.closed else { return false }
            state.jobs.append(job)
            return true
        }
        if queued { wake() }
        return queued
    }

    /// The queued jobs, taken; with `close` and none queued, no job is taken any more.
    func takeJobs(closingIfNone close: Bool) -> [@Sendable () async -> Void] {
        state.withLock { state in
            let jobs = state.jobs
            state.jobs = []
            if jobs.isEmpty && close { state.closed = true }
            return jobs
        }
    }

    /// Parks the keeper until a job is queued or `timeout` has passed.
    func waitForJob(timeout: Duration) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let parked = state.withLock { state -> Bool in
                guard state.jobs.isEmpty else { return false }
                state.waiter = continuation
                return true
            }
            guard parked else {
                continuation.resume()
                return
            }
            // A timer that fires after a job woke the keeper wakes a later
            // wait early at worst: the keeper looks again and parks again.
            Task {
                try? await Task.sleep(for: timeout)
                self.wake()
            }
        }
    }

    private func wake() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }
}
