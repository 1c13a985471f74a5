#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

import OAuth2

/// The time of a ``ManualClock`` and the tasks waiting on it, as a pure state machine.
///
/// No locks, no continuations resumed here: the clock takes its lock, calls
/// one event method, releases the lock, then resumes the returned
/// ``Wakeups`` (async-http-client's pattern). A continuation is held in one
/// place only and removed when it is handed out, so it is resumed exactly once.
struct ManualClockState: Sendable {
    typealias Continuation = CheckedContinuation<Void, any Error>

    /// A point in the clock's time: the date it was last set to plus the
    /// distance advanced since, kept as a `Duration` so that steps of any size
    /// add up exactly (a hundred 10 ms steps reach a 1 s deadline).
    struct Instant: Sendable {
        var base: Date
        var offset: Duration

        var date: Date {
            base.addingTimeInterval(offset.timeInterval)
        }

        /// Exact between instants on the same base; by date across a ``ManualClockState/set(_:)``.
        func isBefore(_ other: Instant) -> Bool {
            base == other.base ? offset < other.offset : date < other.date
        }
    }

    /// Continuations to resume, in order, once the lock is released.
    struct Wakeups: Sendable {
        fileprivate var list: [(Continuation, Result<Void, any Error>)] = []

        func resume() {
            for (continuation, result) in list {
                continuation.resume(with: result)
            }
        }
    }

    /// What a suspended task waits for.
    private enum Condition {
        /// A sleeper: the clock reaching this instant.
        case deadline(Instant)
        /// A test in ``ManualClock/waitForSleepers(count:)``: this many sleepers.
        case sleepers(Int)
    }

    /// Where one suspension stands. Registering comes before the continuation
    /// exists (so a cancellation between the two is not lost), hence three phases.
    private enum Phase {
        /// Registered; its continuation not yet handed over.
        /// → `waiting` (``attach(_:to:)``), `decided` (its condition holds, or it is cancelled).
        case registered
        /// Suspended on its continuation.
        /// → removed, the continuation handed out, when its condition holds or it is cancelled.
        case waiting(Continuation)
        /// Its condition held, or it was cancelled, before the continuation came.
        /// → removed, the continuation handed out, by ``attach(_:to:)``.
        case decided(Result<Void, any Error>)
    }

    private struct Suspension {
        let condition: Condition
        var phase: Phase
    }

    private(set) var now: Instant
    private var suspensions: [UInt64: Suspension] = [:]
    private var nextID: UInt64 = 0

    init(start: Date) {
        now = Instant(base: start, offset: .zero)
    }

    /// Sleepers neither woken nor cancelled.
    var sleeperCount: Int {
        suspensions.values.count { suspension in
            switch (suspension.condition, suspension.phase) {
            case (.deadline, .registered), (.deadline, .waiting): return true
            case (.deadline, .decided), (.sleepers, _): return false
            }
        }
    }

    /// Registers a sleeper until `duration` from now; it may satisfy tests waiting for sleepers.
    mutating func startSleeping(for duration: Duration) -> (UInt64, Wakeups) {
        var deadline = now
        deadline.offset += duration
        let id = register(.deadline(deadline), decided: now.isBefore(deadline) ? nil : .success(()))
        let sleepers = sleeperCount
        var wakeups = Wakeups()
        for (waiterID, waiter) in suspensions {
            if case .sleepers(let count) = waiter.condition, count <= sleepers {
                decide(waiterID, .success(()), into: &wakeups)
            }
        }
        return (id, wakeups)
    }

    /// Registers a test waiting for `count` sleepers; `nil` when there already are that many.
    mutating func startWaiting(forSleepers count: Int) -> UInt64? {
        guard sleeperCount < count else { return nil }
        return register(.sleepers(count), decided: nil)
    }

    /// Hands over the continuation of a registered suspension.
    mutating func attach(_ continuation: Continuation, to id: UInt64) -> Wakeups {
        guard let suspension = suspensions[id] else {
            preconditionFailure("ManualClock: a continuation for an unknown suspension")
        }
        switch suspension.phase {
        case .registered:
            suspensions[id]?.phase = .waiting(continuation)
            return Wakeups()
        case .decided(let result):
            suspensions[id] = nil
            return Wakeups(list: [(continuation, result)])
        case .waiting:
            preconditionFailure("ManualClock: a second continuation for one suspension")
        }
    }

    /// The task of suspension `id` was cancelled: it ends with `CancellationError`
    /// unless it was already woken.
    mutating func cancel(_ id: UInt64) -> Wakeups {
        var wakeups = Wakeups()
        decide(id, .failure(CancellationError()), into: &wakeups)
        return wakeups
    }

    /// Moves the clock by `duration`; wakes, in deadline order, the sleepers it reaches.
    mutating func advance(by duration: Duration) -> Wakeups {
        now.offset += duration
        return wakeReachedDeadlines()
    }

    /// Sets the clock to `date`; wakes, in deadline order, the sleepers it reaches.
    mutating func set(_ date: Date) -> Wakeups {
        now = Instant(base: date, offset: .zero)
        return wakeReachedDeadlines()
    }

    private mutating func wakeReachedDeadlines() -> Wakeups {
        var reached: [(id: UInt64, deadline: Instant)] = []
        for (id, suspension) in suspensions {
            guard case .deadline(let deadline) = suspension.condition, !now.isBefore(deadline) else { continue }
            switch suspension.phase {
            case .registered, .waiting: reached.append((id, deadline))
            case .decided: break
            }
        }
        reached.sort { $0.deadline.isBefore($1.deadline) || (!$1.deadline.isBefore($0.deadline) && $0.id < $1.id) }
        var wakeups = Wakeups()
        for (id, _) in reached {
            decide(id, .success(()), into: &wakeups)
        }
        return wakeups
    }

    private mutating func register(_ condition: Condition, decided result: Result<Void, any Error>?) -> UInt64 {
        let id = nextID
        nextID += 1
        suspensions[id] = Suspension(condition: condition, phase: result.map(Phase.decided) ?? .registered)
        return id
    }

    /// Ends suspension `id` with `result`, unless it has already ended.
    private mutating func decide(_ id: UInt64, _ result: Result<Void, any Error>, into wakeups: inout Wakeups) {
        guard let suspension = suspensions[id] else { return }
        switch suspension.phase {
        case .registered:
            suspensions[id]?.phase = .decided(result)
        case .waiting(let continuation):
            suspensions[id] = nil
            wakeups.list.append((continuation, result))
        case .decided:
            break
        }
    }
}
