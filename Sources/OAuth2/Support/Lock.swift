#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A mutual-exclusion lock over `pthread_mutex_t`.
///
/// Used instead of `Synchronization.Mutex` because on Linux ThreadSanitizer
/// does not see Mutex's raw futex and reports false races; a pthread mutex
/// keeps the sanitizer useful.
package final class Lock: @unchecked Sendable {
    // @unchecked: the mutex is the synchronization; it is allocated once and never moved.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>

    /// Creates an unlocked lock.
    package init() {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        let result = pthread_mutex_init(mutex, nil)
        precondition(result == 0, "pthread_mutex_init failed: \(result)")
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    /// Acquires the lock; pair with ``unlock()``.
    package func lock() {
        let result = pthread_mutex_lock(mutex)
        precondition(result == 0, "pthread_mutex_lock failed: \(result)")
    }

    /// Releases the lock.
    package func unlock() {
        let result = pthread_mutex_unlock(mutex)
        precondition(result == 0, "pthread_mutex_unlock failed: \(result)")
    }

    /// Releases the lock, sleeps until `condition` is signalled, and takes the
    /// lock again before returning. Call it holding the lock, in a loop that
    /// checks what it waits for: a wakeup may be spurious.
    package func wait(on condition: LockCondition) {
        let result = pthread_cond_wait(condition.condition, mutex)
        precondition(result == 0, "pthread_cond_wait failed: \(result)")
    }

    /// Runs `body` holding the lock. Do not suspend, resume continuations or call out inside.
    @inlinable
    package func withLock<Result, Failure: Error>(_ body: () throws(Failure) -> Result) throws(Failure) -> Result {
        lock()
        defer { unlock() }
        return try body()
    }
}

/// A condition variable over `pthread_cond_t`, waited on with ``Lock/wait(on:)``.
package final class LockCondition: @unchecked Sendable {
    // @unchecked: the condition variable is the synchronization; allocated once and never moved.
    fileprivate let condition: UnsafeMutablePointer<pthread_cond_t>

    /// Creates a condition nobody waits on.
    package init() {
        condition = .allocate(capacity: 1)
        condition.initialize(to: pthread_cond_t())
        let result = pthread_cond_init(condition, nil)
        precondition(result == 0, "pthread_cond_init failed: \(result)")
    }

    deinit {
        pthread_cond_destroy(condition)
        condition.deinitialize(count: 1)
        condition.deallocate()
    }

    /// Wakes one thread waiting on the condition, if any.
    package func signal() {
        _ = pthread_cond_signal(condition)
    }
}

/// A value guarded by a ``Lock``.
package final class LockedValue<Value>: @unchecked Sendable {
    // @unchecked: every access to `value` goes through `lock`.
    private let lock = Lock()
    // No run-time exclusivity check either: the lock already keeps accesses
    // apart (a nested `withLock` on the same value deadlocks before it could
    // overlap), and with the Swift runtime shared each check is a call and a
    // thread-local lookup; `OAuth2Client` takes this lock on every signed
    // request.
    @exclusivity(unchecked) private var value: Value

    /// Wraps an initial value.
    package init(_ value: Value) {
        self.value = value
    }

    /// Runs `body` with exclusive access to the value.
    @inlinable
    package func withLock<Result, Failure: Error>(_ body: (inout Value) throws(Failure) -> Result) throws(Failure) -> Result {
        try lockAndCall(body)
    }

    @usableFromInline
    func lockAndCall<Result, Failure: Error>(_ body: (inout Value) throws(Failure) -> Result) throws(Failure) -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
