#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

import CCurl
import Synchronization

/// A caller driving its own transfer (*leading*): when nothing else is in
/// flight, a caller drives libcurl on its own thread for at most
/// ``CurlTransport/Configuration/callerDrivenWait``, and a quick answer then
/// costs no thread hand-off. ``LeadPolicy`` decides whether it may; this is
/// the driving and the hand-over of `multi` to the engine thread afterwards.
extension CurlEngine {
    /// How ``lead(_:afterYield:)`` ended.
    enum LeadOutcome {
        /// The transport was busy (or leading is off): submit the transfer as usual.
        case declined
        /// The transfer ended while its caller drove it.
        case completed(Result<HTTPTransportResponse, HTTPTransportError>)
        /// The engine thread has the transfer now: ``attach(_:continuation:)``.
        case handedOff
        /// The Task was cancelled meanwhile.
        case cancelled
    }

    /// Whether a caller may find the transport idle and lead: leading is on,
    /// nobody drives and no caller is yielding before its lead. Only a hint,
    /// read without the lock: ``lead(_:afterYield:)`` decides.
    private var mayLead: Bool {
        callerDrivenNanoseconds > 0 && nobodyDrives.load(ordering: .relaxed) && !leadClaimed.load(ordering: .relaxed)
    }

    /// With ``yieldsBeforeLeading``: whether the caller may lead, and whether
    /// it yields first (``lead(_:afterYield:)``). It yields when other callers
    /// seem to be sending (`othersMaySend`) and after ``LeadPolicy/maxLeadsInARow``
    /// leads without one; a yield costs a caller alone about 3 µs of
    /// CPU per request, too much to pay on every one. One caller at a time yields: the tasks
    /// that run meanwhile do not lead, they queue their requests without
    /// waking the driver, and its lead takes them along.
    func claimLead() -> LeadClaim {
        guard mayLead else { return .no }
        if !othersMaySend.load(ordering: .relaxed) && leadsWithoutYield.load(ordering: .relaxed) < LeadPolicy.maxLeadsInARow {
            leadsWithoutYield.wrappingAdd(1, ordering: .relaxed)
            return .now
        }
        guard leadClaimed.compareExchange(expected: false, desired: true, ordering: .relaxed).exchanged else { return .no }
        leadsWithoutYield.store(0, ordering: .relaxed)
        return .afterYield
    }

    /// What ``claimLead()`` allows a caller with one CPU.
    enum LeadClaim {
        /// Submit the request as usual.
        case no
        /// Lead at once (``lead(_:afterYield:)`` without the yield).
        case now
        /// Yield, then lead (``lead(_:afterYield:)``), taking along what the others queued meanwhile.
        case afterYield
    }

    /// Drives `transfer` on the calling thread when nothing else is in flight,
    /// for at most ``CurlTransport/Configuration/callerDrivenWait``.
    ///
    /// Blocks the calling thread that long at most, in `curl_multi_poll`;
    /// returns sooner when the transfer ends, the Task is cancelled, another
    /// request or a cancellation is queued, or the engine stops. On the engine
    /// thread (a task that prefers it as executor) it usually declines, since
    /// that thread drives while it runs jobs; when it does lead there, it
    /// drives the transfer just as the engine would.
    ///
    /// `afterYield`: the caller claimed the lead (``claimLead()``) and has
    /// yielded since; the claim ends here. The requests queued meanwhile are
    /// started with its own when it leads, and the driver is woken for them
    /// when it does not.
    func lead(_ transfer: CurlTransfer, afterYield: Bool = false) -> LeadOutcome {
        if afterYield {
            leadClaimed.store(false, ordering: .relaxed)
        }
        guard afterYield || mayLead else { return .declined }
        let now = Self.monotonicNanoseconds()
        lock.lock()
        // After a yield, the requests the other tasks queued meanwhile come
        // along: with one CPU they could not run while this caller drives.
        guard case .running = phase, case .nobody = driver, case .created = transfer.state, incoming.isEmpty || afterYield,
            cancelled.isEmpty, callerDrivenNanoseconds > 0, leadPolicy.leadRequested(at: now) == .lead
        else {
            if afterYield && !incoming.isEmpty {
                // Requests queued while this caller yielded did not wake the driver.
                wakeIfSleepingLocked()
            }
            lock.unlock()
            return .declined
        }
        driver = .caller
        transfer.state = .leading
        if afterYield {
            othersMaySend.store(!incoming.isEmpty, ordering: .relaxed)
        }
        swap(&incoming, &leadCompany)
        // Skip the ones cancelled while queued, as the engine thread does.
        leadCompany.removeAll { if case .finished = $0.state { true } else { false } }
        requestsLedAlong += leadCompany.count
        lock.unlock()

        let deadline = now + callerDrivenNanoseconds
        applyConnectionCacheSize()
        start(transfer)
        for other in leadCompany {
            admit(other)
        }
        leadCompany.removeAll(keepingCapacity: true)
        var stillRunning: Int32 = 0
        while true {
            // The requests it holds back for a busy host wait at most until their own deadline.
            var heldWait = Int32.max
            if transfer.easy != nil {
                _ = ccurl_multi_perform(multi, &stillRunning)
                collectCompleted()
                if admission.needsAttention {
                    heldWait = attendToHeld()
                }
            }
            let now = Self.monotonicNanoseconds()
            let remaining = deadline - now
            lock.lock()
            if let result = transfer.takeCompletedResult() {
                handBackLocked(after: .answered, host: transfer, at: now)
                lock.unlock()
                return .completed(result)
            }
            switch transfer.state {
            case .finished:
                handBackLocked(after: .cancelled, host: transfer, at: now)
                lock.unlock()
                return .cancelled
            case .leading, .created, .cancelledEarly, .waiting, .completed:
                break
            }
            guard case .running = phase, incoming.isEmpty, cancelled.isEmpty, remaining > 0 else {
                handToEngineLocked(after: remaining > 0 ? .gaveWay : .ranOutOfTime, host: transfer, at: now)
                lock.unlock()
                return .handedOff
            }
            callerPolling = true
            lock.unlock()
            // Whole milliseconds, at least 1; a wakeup (new work, cancellation, stop) ends it early.
            let milliseconds = Swift.min(Int32(clamping: Swift.max(remaining / 1_000_000, 1)), heldWait)
            _ = ccurl_multi_poll(multi, nil, 0, milliseconds, nil)
            lock.lock()
            callerPolling = false
            lock.unlock()
        }
    }

    /// Gives `multi` back after a lead that ended as `end`: to nobody when
    /// nothing is left, else to the engine thread. Called under the lock by
    /// the leading caller.
    private func handBackLocked(after end: LeadPolicy.End, host transfer: CurlTransfer, at now: Int64) {
        if case .running = phase, active.isEmpty, admission.heldCount == 0, incoming.isEmpty, cancelled.isEmpty {
            leadPolicy.leadEnded(end, host: { transfer.hostKey }, othersQueued: false, at: now)
            driver = .nobody
        } else {
            handToEngineLocked(after: end, host: transfer, at: now)
        }
    }

    /// Hands `multi` from a leading caller whose lead ended as `end` to the
    /// engine thread, waking it when it is parked. Called under the lock.
    private func handToEngineLocked(after end: LeadPolicy.End, host transfer: CurlTransfer, at now: Int64) {
        // Requests queued meanwhile are a sign of concurrent callers, whom
        // the engine thread serves alone for a while.
        leadPolicy.leadEnded(end, host: { transfer.hostKey }, othersQueued: !incoming.isEmpty, at: now)
        driver = .engine
        if engineParked {
            parked.signal()
        }
    }

    /// Registers the continuation of a transfer whose caller handed it to the
    /// engine thread, or resumes it at once when it already ended.
    func attach(_ transfer: CurlTransfer, continuation: CurlTransfer.Continuation) {
        lock.lock()
        if let result = transfer.takeCompletedResult() {
            lock.unlock()
            Self.resume(continuation, with: result)
            return
        }
        switch transfer.state {
        case .leading:
            transfer.state = .waiting(continuation)
            lock.unlock()
        case .completed:
            // Taken above.
            lock.unlock()
        case .finished:
            // Cancelled since the hand-off; `cancel` queued it for removal.
            lock.unlock()
            continuation.resume(throwing: CancellationError())
        case .created, .cancelledEarly, .waiting:
            lock.unlock()
            preconditionFailure("only a transfer its caller led is attached")
        }
    }
}
