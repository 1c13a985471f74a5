#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Waits for a lock that can only be tried, not waited on: `flock` with
/// `LOCK_NB`, a set of held keys. Tries at once, then again after pauses that
/// grow from 1 ms to 25 ms, until the lock is taken or `timeout` has passed.
///
/// Polling keeps waiting cancellable and bounded without a thread parked in
/// the kernel per waiter; the pause is short next to a token request, and the
/// client's single-flight means one waiter per account per process.
package enum StoreLockWait {
    /// - Parameters:
    ///   - what: how the message names the lock (`account "alice"`).
    ///   - tryOnce: takes the lock and returns `true`, or returns `false` when it is held.
    /// - Throws: `lock_timeout` after `timeout`, `cancelled` when the task is
    ///   cancelled, or what `tryOnce` throws.
    package static func acquire(
        timeout: Duration,
        what: String,
        _ tryOnce: () async throws(OAuth2Error) -> Bool
    ) async throws(OAuth2Error) {
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: timeout)
        var pause = Duration.milliseconds(1)
        while true {
            if try await tryOnce() { return }
            let now = clock.now
            guard now < deadline else {
                throw OAuth2Error(
                    code: .lockTimeout,
                    message:
                        "waited \(timeout.secondsDescription) for the lock of \(what), which another process or task holds; it may be stuck (a token request takes at most the request timeout)"
                )
            }
            do {
                try await Task.sleep(for: min(pause, now.duration(to: deadline)))
            } catch {
                throw OAuth2Error(code: .cancelled, message: "waiting for the lock of \(what) was cancelled")
            }
            pause = min(pause * 2, .milliseconds(25))
        }
    }
}
