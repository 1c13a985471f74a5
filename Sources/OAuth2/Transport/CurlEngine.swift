#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

import CCurl
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// One libcurl multi handle and the thread that drives it, which is also a
/// `TaskExecutor` (``CurlTransport/executor``).
///
/// One thread at a time drives libcurl: the *driver* (`driver`, under `lock`),
/// which owns `multi`, the easy handles, the active transfers and the pool of
/// idle handles (`curl_multi_wakeup` is the exception, made for other threads).
/// Usually that is the engine thread. Other threads put work in `incoming`,
/// `cancelled` or `jobs` under `lock` and wake the driver when it sleeps in
/// `curl_multi_poll`, or the engine thread when it is parked on `parked`.
///
/// When nothing is in flight the engine thread parks and nobody drives. A
/// caller that finds it so drives its own transfer on its own thread
/// (``lead(_:)``), for at most ``CurlTransport/Configuration/callerDrivenWait``:
/// a request that completes in that time costs no thread hand-off at all
/// (when leading is skipped is said there). The engine thread gives libcurl
/// up *before* it resumes the callers of the last transfers, so a caller that
/// sends again at once finds it free. As soon as anyone else queues work, or
/// the time is up, a leading caller hands `multi` to the
/// engine thread and waits for its response like everyone else.
///
/// With one CPU (``yieldsBeforeLeading``) a caller yields before it leads
/// when other callers seem to be sending, and after ``maxLeadsInARow`` leads
/// without one anyway. The requests the other tasks queue meanwhile wake
/// nobody: they could not run while it drives, so its lead starts them along
/// with its own, and the one CPU goes to libcurl, the server and the callers
/// instead of to waking the engine thread and switching to it. The others' callers are resumed as their answers
/// come; what is still running when the leader's own answer comes goes to
/// the engine thread.
///
/// The driver gives libcurl at most ``CurlTransport/Configuration/maxConnectionsPerHost``
/// transfers per host (half once a second engine has started beside it);
/// the others wait in `hosts`, in order, each until one to its host ends or
/// its own timeout runs out. libcurl's own per-host limit
/// (`CURLMOPT_MAX_HOST_CONNECTIONS`) is not used: libcurl 7.88 queues the
/// transfers beyond it, wakes one per transfer that ends, and can lose such a
/// wakeup. In a storm of 1,000 requests, transfers then sat without a
/// connection while every connection was idle, until the thread's 5-second
/// poll ended (BENCHMARKS.md, issue 15). Nor does it let a queued transfer
/// time out before a connection frees up.
///
/// A transfer is completed by moving its state on under the lock and resuming
/// the caller outside it, so every caller is resumed exactly once by whoever
/// wins that move. Each turn the engine thread runs the jobs of tasks that
/// prefer it as their executor, then, when it drives, starts what is queued
/// and drives libcurl.
final class CurlEngine: TaskExecutor, @unchecked Sendable {
    // @unchecked: the fields marked "guarded" are only touched under `lock`;
    // `multi`, `active` and `idleHandles` belong to the driver alone, and change
    // hands only through `driver`, under `lock`.

    /// The life of the engine. Guarded.
    private enum Phase {
        /// Accepting requests. → `stopping`.
        case running
        /// `stop()` was called; the thread fails what is left and exits. → `stopped`.
        case stopping
        /// The thread has exited and every handle is gone. Terminal.
        case stopped
    }

    /// Who drives libcurl. Guarded.
    private enum Driver {
        /// The engine thread. → `nobody` (when nothing is in flight nor queued).
        case engine
        /// Nobody: nothing is in flight; the engine thread is parked or about to be.
        /// → `engine` (work arrived), → `caller` (``lead(_:)``).
        case nobody
        /// A caller, on its own thread, for its one transfer. → `engine`, → `nobody`.
        case caller
    }

    private let configuration: CurlTransport.Configuration
    private let multi: UnsafeMutableRawPointer
    private let lock = Lock()
    /// `driver == .nobody`, readable without the lock: a caller that finds it
    /// false (the engine is busy, the usual case with concurrent callers)
    /// queues its request without taking the lock twice. Only a hint: `lead`
    /// checks `driver` again under the lock.
    private let nobodyDrives = Atomic<Bool>(false)
    /// Where the engine thread parks while it does not drive and has no jobs.
    private let parked = LockCondition()
    /// How long a caller may drive its own transfer, in nanoseconds; 0: never.
    private let callerDrivenNanoseconds: Int64

    /// ``CurlTransport/Configuration/callerDrivenWait`` in nanoseconds: none
    /// when not positive, at most the documented 10 s (a wait of 10.5 s, or
    /// of a year, is 10 s, not 10 s and the fraction).
    static func callerDrivenNanoseconds(_ wait: Duration) -> Int64 {
        let (seconds, attoseconds) = wait.components
        if seconds < 0 || (seconds == 0 && attoseconds <= 0) { return 0 }
        if seconds >= 10 { return 10_000_000_000 }
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
    /// Whether a caller may yield before it leads (``claimLead()``): with one
    /// CPU, Swift's cooperative pool has one thread, which a leading caller
    /// blocks in `poll`. Yielding first lets the tasks ready on it run, and
    /// send their own requests, which its lead then starts with its own
    /// (measured in BENCHMARKS.md, "What was tried").
    let yieldsBeforeLeading: Bool
    /// A caller has claimed the next lead and is yielding first (``claimLead()``).
    private let leadClaimed = Atomic<Bool>(false)
    /// With one CPU: whether other callers seem to be sending too (a lead
    /// took their requests along, or one was queued while nobody could lead),
    /// so that a caller yields before it leads. A lead after a yield that
    /// finds nothing queued clears it.
    private let othersMaySend = Atomic<Bool>(false)
    /// With one CPU: leads without a yield since the last yield; after
    /// ``maxLeadsInARow`` of them a caller yields, so that other tasks ready
    /// on the one thread run.
    private let leadsWithoutYield = Atomic<Int>(0)

    // The mutable state below, a transfer's and an easy handle's, is
    // `@exclusivity(unchecked)`: Swift's run-time check that two accesses to
    // a class property never overlap took 37 calls into the runtime per
    // request, about a microsecond of CPU with one CPU. Each property is touched under `lock` or by the one
    // driver, and no access spans a call that could reach the same property
    // again: libcurl's callbacks, inside `curl_multi_perform`, touch only the
    // transfer's response fields, which nothing else accesses meanwhile. The
    // tests ran with the check on before it went, and never tripped it.

    // Guarded by `lock`.
    @exclusivity(unchecked) private var phase = Phase.running
    /// Whether the engine thread has already cleaned up `multi`.
    @exclusivity(unchecked) private var multiCleanedUp = false
    @exclusivity(unchecked) private var incoming: [CurlTransfer] = []
    @exclusivity(unchecked) private var cancelled: [CurlTransfer] = []
    /// Whether the thread is in (or about to enter) `curl_multi_poll` and needs a wakeup.
    @exclusivity(unchecked) private var sleeping = false
    @exclusivity(unchecked) private var driver = Driver.engine {
        didSet { nobodyDrives.store(driver == .nobody, ordering: .relaxed) }
    }
    /// Whether a leading caller is in (or about to enter) `curl_multi_poll`.
    @exclusivity(unchecked) private var callerPolling = false
    /// Whether the engine thread waits on `parked`.
    @exclusivity(unchecked) private var engineParked = false
    /// No caller leads before this time (CLOCK_MONOTONIC ns): set when a lead
    /// had to give way to another request, a sign of concurrent callers, for
    /// whom handing every request to the engine thread is cheaper; and when a
    /// lead's time ran out before its answer came (``slowAnswersPause(after:)``).
    @exclusivity(unchecked) private var noLeadUntil: Int64 = 0
    /// Leads in a row whose time ran out before their answer came; a lead
    /// to the same host (`slowLeadsHost`) answered in time sets it back to 0.
    /// Each one doubles the pause after it.
    @exclusivity(unchecked) private var slowLeadsInARow = 0
    /// The host (``CurlTransfer/hostKey``) of the last lead that ran out of
    /// time. A quick answer from another host does not end the series: a
    /// slow host's leads would otherwise pause only 10 ms after each quick
    /// answer from another, and block their callers' threads every time.
    @exclusivity(unchecked) private var slowLeadsHost: String?
    /// Leads since a caller last suspended for its response; see `maxLeadsInARow`.
    @exclusivity(unchecked) private var leadsInARow = 0
    @exclusivity(unchecked) private var stopWaiters: [CheckedContinuation<Void, Never>] = []
    /// Jobs of tasks that prefer this engine as their executor (``CurlTransport/executor``).
    @exclusivity(unchecked) private var jobs: [UnownedJob] = []

    // The driver only.
    @exclusivity(unchecked) private var active: [CurlTransfer] = []
    /// What a leading caller's turn completed; kept, emptied, between turns,
    /// so that a lead allocates no array.
    @exclusivity(unchecked) private var leadFinished: [Finished] = []
    /// The requests a caller found queued after its yield, which it starts
    /// with its own (``lead(_:afterYield:)``); kept, emptied, between leads.
    @exclusivity(unchecked) private var leadCompany: [CurlTransfer] = []
    @exclusivity(unchecked) private var idleHandles: [CurlEasyHandle] = []
    /// Per host (``CurlTransfer/hostKey``) with a transfer in libcurl or
    /// held back, while ``countsHosts``.
    @exclusivity(unchecked) private var hosts: [String: HostQueue] = [:]
    /// Whether `hosts` counts the transfers in libcurl. Not while fewer than
    /// `maxTransfersPerHost` are in libcurl and none is held back: no host
    /// can be at its limit then, and a request skips the table (its host's
    /// key made and looked up three times, 1,300 instructions). Counting starts when a transfer arrives
    /// with that many in libcurl, and stops when the table empties.
    @exclusivity(unchecked) private var countsHosts = false
    /// Hosts where a transfer ended while others were held back.
    @exclusivity(unchecked) private var hostsWithRoom: [String] = []
    /// Transfers held back in `hosts` (cancelled ones included until dropped).
    @exclusivity(unchecked) private var heldCount = 0
    /// No held transfer's deadline is before this (CLOCK_MONOTONIC ns).
    @exclusivity(unchecked) private var nextHeldDeadline = Int64.max
    /// ``CurlTransport/Configuration/maxConnectionsPerHost``, at least 1,
    /// until ``shareLimits(transfersPerHost:connections:)`` lowers it.
    /// Read by the driver.
    private let maxTransfersPerHost: Atomic<Int>
    /// libcurl's connection cache size (`CURLMOPT_MAXCONNECTS`):
    /// ``CurlTransport/Configuration/maxConnections``, at least 1, until
    /// ``shareLimits(transfersPerHost:connections:)`` lowers it; the driver
    /// hands it to libcurl (``applyConnectionCacheSize()``).
    private let connectionCacheSize: Atomic<Int>
    /// The cache size libcurl has. Driver only.
    @exclusivity(unchecked) private var appliedConnectionCacheSize: Int
    /// The engine thread, set once it is created.
    @exclusivity(unchecked) private var thread = pthread_t()

    /// Whether the caller runs on the engine thread (a task that prefers it as executor).
    var isCurrentThread: Bool {
        pthread_equal(pthread_self(), thread) != 0
    }

    /// The transfers of one host: how many libcurl has, and those held back
    /// until it has fewer than `maxTransfersPerHost`, oldest first.
    private struct HostQueue {
        var running = 0
        var held: [CurlTransfer] = []
        /// The first of `held` not taken yet.
        var next = 0

        var hasHeld: Bool { next < held.count }
        var isUnused: Bool { running == 0 && !hasHeld }

        mutating func takeHeld() -> CurlTransfer? {
            guard hasHeld else { return nil }
            let transfer = held[next]
            next += 1
            if next == held.count {
                held.removeAll(keepingCapacity: held.count <= 64)
                next = 0
            }
            return transfer
        }
    }

    /// Creates the multi handle and starts the thread.
    ///
    /// `allowedCPUs`: how many CPUs the process may use, as the caller's
    /// thread's affinity says when `nil` (tests give 1 to have callers yield
    /// before they lead on any machine).
    ///
    /// - Throws: ``HTTPTransportError/other(_:)`` when libcurl or the thread cannot be set up.
    init(configuration: CurlTransport.Configuration, allowedCPUs: Int? = nil) throws(HTTPTransportError) {
        if let error = CurlGlobal.initializationError {
            throw error
        }
        guard let multi = ccurl_multi_init() else {
            throw .other("libcurl could not create a multi handle")
        }
        self.configuration = configuration
        self.multi = multi
        callerDrivenNanoseconds = Self.callerDrivenNanoseconds(configuration.callerDrivenWait)
        yieldsBeforeLeading = (allowedCPUs ?? Int(ccurl_allowed_cpus())) == 1
        let maxConnections = Swift.max(configuration.maxConnections, 1)
        _ = ccurl_multi_setopt_long(multi, CURLMOPT_MAXCONNECTS, maxConnections)
        connectionCacheSize = Atomic(maxConnections)
        appliedConnectionCacheSize = maxConnections
        // The per-host limit is ours (`hosts`), not libcurl's: see the type's comment.
        maxTransfersPerHost = Atomic(Swift.max(configuration.maxConnectionsPerHost, 1))
        incoming.reserveCapacity(16)
        cancelled.reserveCapacity(16)
        leadFinished.reserveCapacity(4)

        // The thread holds the engine until it exits.
        let context = Unmanaged.passRetained(self).toOpaque()
        var thread = pthread_t()
        let result = pthread_create(
            &thread, nil,
            { context in
                guard let context else { return nil }
                let engine = Unmanaged<CurlEngine>.fromOpaque(context).takeRetainedValue()
                engine.run()
                return nil
            }, context)
        guard result == 0 else {
            Unmanaged<CurlEngine>.fromOpaque(context).release()
            phase = .stopped
            throw .other("could not start the transport thread (error \(result))")
        }
        pthread_detach(thread)
        self.thread = thread
    }

    deinit {
        // Reached only after the thread exited (it holds a reference), or when it never started.
        let cleanedUp = lock.withLock { multiCleanedUp }
        if !cleanedUp {
            ccurl_multi_cleanup(multi)
        }
    }

    // MARK: - Any thread

    /// Queues `transfer` for the engine thread, or resumes `continuation` at once
    /// when the Task was cancelled first or the engine is stopping.
    func submit(_ transfer: CurlTransfer, continuation: CurlTransfer.Continuation) {
        enum Outcome { case queued, cancelled, shutDown }
        lock.lock()
        let outcome: Outcome
        switch (phase, transfer.state) {
        case (.running, .created):
            transfer.state = .waiting(continuation)
            incoming.append(transfer)
            // While a caller yields before its lead (`claimLead()`), nobody is
            // woken: the caller takes this request along, or wakes the driver
            // for it, when it is back (`lead`).
            if !leadClaimed.load(ordering: .relaxed) {
                wakeIfSleepingLocked()
            }
            if yieldsBeforeLeading {
                othersMaySend.store(true, ordering: .relaxed)
            }
            outcome = .queued
        case (_, .cancelledEarly):
            transfer.state = .finished
            outcome = .cancelled
        case (.stopping, .created), (.stopped, .created):
            transfer.state = .finished
            outcome = .shutDown
        case (_, .waiting), (_, .finished), (_, .leading), (_, .completed):
            lock.unlock()
            preconditionFailure("a transfer is submitted once")
        }
        lock.unlock()
        switch outcome {
        case .queued: break
        case .cancelled: continuation.resume(throwing: CancellationError())
        case .shutDown: continuation.resume(throwing: HTTPTransportError.shutDown)
        }
    }

    /// Runs `job` on the engine thread, between two turns of libcurl.
    ///
    /// A task whose executor preference is this engine then submits its next
    /// request, and is resumed with its response, on the engine thread itself:
    /// no thread is woken on either side. Once the thread has exited, jobs go
    /// to the global executor.
    func enqueue(_ job: consuming ExecutorJob) {
        let unowned = UnownedJob(job)
        lock.lock()
        if case .stopped = phase {
            lock.unlock()
            globalConcurrentExecutor.enqueue(unowned)
            return
        }
        jobs.append(unowned)
        wakeIfSleepingLocked()
        lock.unlock()
    }

    /// Cancels `transfer` for its Task: resumes the caller with `CancellationError`
    /// now, and has the engine thread remove the transfer from libcurl.
    func cancel(_ transfer: CurlTransfer) {
        lock.lock()
        switch transfer.state {
        case .created:
            transfer.state = .cancelledEarly
            lock.unlock()
        case .leading:
            // Its caller drives it: the wakeup ends its poll, it sees `finished`
            // and throws; whoever drives next removes the transfer from libcurl.
            transfer.state = .finished
            if case .running = phase {
                cancelled.append(transfer)
            }
            wakeIfSleepingLocked()
            lock.unlock()
        case .waiting(let continuation):
            transfer.state = .finished
            if case .running = phase {
                cancelled.append(transfer)
                wakeIfSleepingLocked()
            }
            lock.unlock()
            continuation.resume(throwing: CancellationError())
        case .cancelledEarly, .completed, .finished:
            lock.unlock()
        }
    }

    /// Starts stopping the engine: refuses new requests; the thread fails every
    /// queued and running request with ``HTTPTransportError/shutDown`` and exits.
    func stop() {
        lock.lock()
        if case .running = phase {
            phase = .stopping
            wakeIfSleepingLocked()
        }
        lock.unlock()
    }

    /// Stops the engine and returns once its thread has exited.
    func stopAndWait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            lock.lock()
            switch phase {
            case .running:
                phase = .stopping
                wakeIfSleepingLocked()
                stopWaiters.append(continuation)
                lock.unlock()
            case .stopping:
                stopWaiters.append(continuation)
                lock.unlock()
            case .stopped:
                lock.unlock()
                continuation.resume()
            }
        }
    }

    /// Wakes the driver out of `curl_multi_poll`, and the engine thread when
    /// it is parked. Called under the lock, so the engine thread cannot be
    /// cleaning up the multi handle meanwhile.
    private func wakeIfSleepingLocked() {
        if sleeping || callerPolling {
            sleeping = false
            _ = ccurl_multi_wakeup(multi)
        }
        if engineParked {
            parked.signal()
        }
    }

    // MARK: - A caller driving its own transfer

    /// How ``lead(_:)`` ended.
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
    /// read without the lock: ``lead(_:)`` decides.
    private var mayLead: Bool {
        callerDrivenNanoseconds > 0 && nobodyDrives.load(ordering: .relaxed) && !leadClaimed.load(ordering: .relaxed)
    }

    /// With ``yieldsBeforeLeading``: whether the caller may lead, and whether
    /// it yields first (``lead(_:afterYield:)``). It yields when other callers
    /// seem to be sending (`othersMaySend`) and after ``maxLeadsInARow``
    /// leads without one; a yield costs a caller alone about 3 µs of
    /// CPU per request. One caller at a time yields: the tasks
    /// that run meanwhile do not lead, they queue their requests without
    /// waking the driver, and its lead takes them along.
    func claimLead() -> LeadClaim {
        guard mayLead else { return .no }
        if !othersMaySend.load(ordering: .relaxed) && leadsWithoutYield.load(ordering: .relaxed) < Self.maxLeadsInARow {
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
            cancelled.isEmpty, now >= noLeadUntil, callerDrivenNanoseconds > 0
        else {
            if afterYield && !incoming.isEmpty {
                // Requests queued while this caller yielded did not wake the driver.
                wakeIfSleepingLocked()
            }
            lock.unlock()
            return .declined
        }
        // A caller that yields before each lead lets the others run then.
        if !yieldsBeforeLeading {
            guard leadsInARow < Self.maxLeadsInARow else {
                // This request suspends, so other tasks waiting for this thread run.
                leadsInARow = 0
                lock.unlock()
                return .declined
            }
            leadsInARow += 1
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
            if transfer.easy != nil {
                _ = ccurl_multi_perform(multi, &stillRunning)
                collectCompleted()
                startHeld()
            }
            let remaining = deadline - Self.monotonicNanoseconds()
            lock.lock()
            if let result = transfer.takeCompletedResult() {
                if slowLeadsInARow > 0 && transfer.hostKey == slowLeadsHost {
                    slowLeadsInARow = 0
                    slowLeadsHost = nil
                }
                handBackLocked()
                lock.unlock()
                return .completed(result)
            }
            switch transfer.state {
            case .finished:
                handBackLocked()
                lock.unlock()
                return .cancelled
            case .leading, .created, .cancelledEarly, .waiting, .completed:
                break
            }
            guard case .running = phase, incoming.isEmpty, cancelled.isEmpty, remaining > 0 else {
                if remaining <= 0 {
                    // The answer takes longer than a lead may wait: a remote
                    // host, for which leading would only block callers'
                    // threads, or a quick one that stalled once (its next
                    // answer in time ends the series).
                    slowLeadsInARow += 1
                    slowLeadsHost = transfer.hostKey
                    let pause = Self.slowAnswersPause(after: slowLeadsInARow)
                    noLeadUntil = Swift.max(noLeadUntil, Self.monotonicNanoseconds() + pause)
                }
                handToEngineLocked()
                lock.unlock()
                return .handedOff
            }
            callerPolling = true
            lock.unlock()
            // Whole milliseconds, at least 1; a wakeup (new work, cancellation, stop) ends it early.
            let milliseconds = Int32(clamping: Swift.max(remaining / 1_000_000, 1))
            _ = ccurl_multi_poll(multi, nil, 0, milliseconds, nil)
            lock.lock()
            callerPolling = false
            lock.unlock()
        }
    }

    /// Gives `multi` back after a lead: to nobody when nothing is left, else
    /// to the engine thread. Called under the lock by the leading caller.
    private func handBackLocked() {
        if case .running = phase, active.isEmpty, heldCount == 0, incoming.isEmpty, cancelled.isEmpty {
            driver = .nobody
        } else {
            handToEngineLocked()
        }
    }

    /// Hands `multi` from a leading caller to the engine thread, waking it
    /// when it is parked. Called under the lock.
    private func handToEngineLocked() {
        if !incoming.isEmpty {
            // Others queued requests meanwhile: concurrent callers, whom the
            // engine thread serves alone for a while (see `noLeadUntil`).
            noLeadUntil = Self.monotonicNanoseconds() + Self.concurrentCallersPause
        }
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

    /// A task whose requests all complete while it leads never suspends, and
    /// would keep its thread from every other task on it (a custom executor's
    /// one thread): after this many leads in a row, one request goes through
    /// the engine thread and its caller suspends; with
    /// ``yieldsBeforeLeading``, the caller yields before the next lead instead.
    private static let maxLeadsInARow = 8

    /// How long no caller leads after a lead gave way to another request (10 ms).
    private static let concurrentCallersPause: Int64 = 10_000_000

    /// How long no caller leads after the `slowLeads`-th lead in a row whose
    /// time ran out before its answer came: 10 ms after the first, doubling
    /// with each, 1 s from the eighth on.
    ///
    /// Answers that slow, again and again, come from a host a lead cannot
    /// help with, and each lead would block its caller's thread for the
    /// whole wait, with one CPU the only thread of Swift's pool: the pause
    /// grows until that costs a lead's wait a second. One stall of a quick
    /// host (the machine busy for a millisecond) costs 10 ms of requests
    /// through the engine thread; a fixed second of them made a whole
    /// sequential benchmark run up to half again slower.
    static func slowAnswersPause(after slowLeads: Int) -> Int64 {
        let doublings = Swift.min(Swift.max(slowLeads, 1) - 1, 7)
        return Swift.min(firstSlowAnswersPause << doublings, longestSlowAnswersPause)
    }

    /// The pause after one lead ran out of time (10 ms).
    private static let firstSlowAnswersPause: Int64 = 10_000_000
    /// The longest pause after leads that ran out of time (1 s).
    private static let longestSlowAnswersPause: Int64 = 1_000_000_000

    /// How many requests a leading caller has started along with its own
    /// (queued while it yielded, with one CPU). Guarded. For tests.
    @exclusivity(unchecked) private var requestsLedAlong = 0

    /// ``requestsLedAlong``, read under the lock. For tests.
    var requestsStartedByOthersLeads: Int {
        lock.withLock { requestsLedAlong }
    }

    /// How long until callers may lead again (a pause after concurrent
    /// callers or a slow answer); negative once they may, and far below zero
    /// when no pause was ever set. For tests, which time the pause without
    /// racing its end.
    var leadPauseRemaining: Duration {
        lock.withLock { .nanoseconds(noLeadUntil - Self.monotonicNanoseconds()) }
    }

    /// Leads in a row that ran out of time before their answer came. For tests.
    var leadsRunOutOfTimeInARow: Int {
        lock.withLock { slowLeadsInARow }
    }

    /// Lowers the connection limits to this engine's share, when a second
    /// engine starts beside it (``CurlTransport``). Transfers to a host above
    /// its new limit run on; the next ones wait until it has fewer.
    func shareLimits(transfersPerHost: Int, connections: Int) {
        maxTransfersPerHost.store(Swift.max(transfersPerHost, 1), ordering: .relaxed)
        connectionCacheSize.store(Swift.max(connections, 1), ordering: .relaxed)
    }

    /// Whether nothing is in flight nor queued, and so the next caller may
    /// lead (unless a pause is on). For tests.
    var isIdle: Bool {
        lock.withLock { driver == .nobody && incoming.isEmpty && cancelled.isEmpty }
    }

    /// The connection limits now, for tests.
    var limits: (transfersPerHost: Int, connections: Int) {
        (maxTransfersPerHost.load(ordering: .relaxed), connectionCacheSize.load(ordering: .relaxed))
    }

    /// Gives libcurl the connection cache size ``shareLimits(transfersPerHost:connections:)``
    /// set, if it changed. Driver only.
    @inline(__always)
    private func applyConnectionCacheSize() {
        let size = connectionCacheSize.load(ordering: .relaxed)
        if size != appliedConnectionCacheSize {
            appliedConnectionCacheSize = size
            _ = ccurl_multi_setopt_long(multi, CURLMOPT_MAXCONNECTS, size)
        }
    }

    /// CLOCK_MONOTONIC in nanoseconds: cheap, and never goes back.
    private static func monotonicNanoseconds() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
    }

    // MARK: - Engine thread (and the driver)

    /// Whether the engine thread has nothing to drive: a caller drives, or
    /// nobody does and nothing is queued. Read under the lock.
    private var engineHasNothingToDriveLocked: Bool {
        switch driver {
        case .caller: true
        case .nobody: incoming.isEmpty && cancelled.isEmpty && { if case .running = phase { true } else { false } }()
        case .engine: false
        }
    }

    /// The engine thread's name, as `top -H`, `perf` and debuggers show it.
    static let threadName = "oauth2-curl"

    /// Names the calling thread (`pthread_setname_np` needs _GNU_SOURCE, which Swift's Glibc lacks).
    private static func nameThisThread() {
        let descriptor = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return }
        _ = threadName.withCString { write(descriptor, $0, strlen($0)) }
        close(descriptor)
    }

    private func run() {
        Self.nameThisThread()
        var batch: [CurlTransfer] = []
        var cancelBatch: [CurlTransfer] = []
        batch.reserveCapacity(16)
        cancelBatch.reserveCapacity(16)
        var stillRunning: Int32 = 0
        var jobBatch: [UnownedJob] = []
        jobBatch.reserveCapacity(16)
        var finished: [Finished] = []
        finished.reserveCapacity(16)

        while true {
            lock.lock()
            // Park while a caller drives, or while nobody needs to (nothing in
            // flight nor queued); jobs run either way.
            while jobs.isEmpty && engineHasNothingToDriveLocked {
                engineParked = true
                lock.wait(on: parked)
                engineParked = false
            }
            if driver == .nobody {
                driver = .engine
            }
            let drives = driver == .engine
            sleeping = false
            swap(&jobs, &jobBatch)
            lock.unlock()
            // First the tasks that run here: what they submit starts in this same turn.
            for job in jobBatch {
                job.runSynchronously(on: asUnownedTaskExecutor())
            }
            jobBatch.removeAll(keepingCapacity: true)
            guard drives else { continue }
            applyConnectionCacheSize()

            lock.lock()
            swap(&incoming, &batch)
            swap(&cancelled, &cancelBatch)
            let stopping: Bool
            if case .running = phase { stopping = false } else { stopping = true }
            if !stopping {
                // Skip the ones cancelled while queued: no need to start them.
                batch.removeAll { if case .finished = $0.state { true } else { false } }
            }
            lock.unlock()

            if stopping {
                shutDown(queued: batch)
                return
            }
            for transfer in cancelBatch {
                if transfer.easy != nil {
                    detach(transfer)
                } else if transfer.heldDeadline != 0 {
                    // Its caller has been resumed; its place in the queue is skipped.
                    transfer.heldCancelled = true
                }
            }
            cancelBatch.removeAll(keepingCapacity: true)
            startHeld()
            for transfer in batch {
                admit(transfer)
            }
            batch.removeAll(keepingCapacity: true)

            _ = ccurl_multi_perform(multi, &stillRunning)
            collectCompleted(into: &finished)
            var pollMilliseconds: Int32 = 5000
            if !hostsWithRoom.isEmpty || heldCount > 0 {
                startHeld()
                pollMilliseconds = expireHeld()
            }

            lock.lock()
            let idle = incoming.isEmpty && cancelled.isEmpty && jobs.isEmpty && { if case .running = phase { true } else { false } }()
            if idle && active.isEmpty {
                // Nothing in flight: libcurl is free for the next caller before the
                // callers are resumed, so one that sends again at once can lead.
                // Park at the top of the loop; from here on only a caller drives.
                driver = .nobody
                lock.unlock()
                resume(&finished)
                continue
            }
            sleeping = idle
            lock.unlock()
            resume(&finished)
            if idle {
                // libcurl shortens the wait to its own next timeout; a wakeup ends it early.
                _ = ccurl_multi_poll(multi, nil, 0, pollMilliseconds, nil)
            }
        }
    }

    /// Starts `transfer` when its host has room in libcurl, else holds it
    /// back behind the others to that host.
    private func admit(_ transfer: CurlTransfer) {
        if !countsHosts {
            // Nothing is held back while not counting (`heldCount` is 0).
            guard active.count >= maxTransfersPerHost.load(ordering: .relaxed) else {
                start(transfer)
                return
            }
            countsHosts = true
            for running in active {
                hosts[running.hostKey, default: HostQueue()].running += 1
                running.isCountedForHost = true
            }
        }
        guard let queue = hosts[transfer.hostKey], queue.running >= maxTransfersPerHost.load(ordering: .relaxed) || queue.hasHeld
        else {
            start(transfer)
            return
        }
        // Its timeout counts from now, as it would in libcurl.
        let deadline = Self.monotonicNanoseconds() + Int64(transfer.timeoutMilliseconds) * 1_000_000
        transfer.heldDeadline = deadline
        hosts[transfer.hostKey, default: HostQueue()].held.append(transfer)
        heldCount += 1
        nextHeldDeadline = Swift.min(nextHeldDeadline, deadline)
    }

    /// Starts held transfers of the hosts that have room again, oldest first;
    /// fails those whose timeout ran out meanwhile.
    private func startHeld() {
        guard !hostsWithRoom.isEmpty else { return }
        let now = Self.monotonicNanoseconds()
        let limit = maxTransfersPerHost.load(ordering: .relaxed)
        while let key = hostsWithRoom.popLast() {
            while hosts[key].map({ $0.running < limit }) ?? false,
                let transfer = hosts[key, default: HostQueue()].takeHeld()
            {
                heldCount -= 1
                let deadline = transfer.heldDeadline
                transfer.heldDeadline = 0
                guard !transfer.heldCancelled else { continue }
                let remaining = (deadline - now) / 1_000_000
                guard remaining >= 1 else {
                    resume(transfer, with: .failure(Self.heldTooLong))
                    continue
                }
                start(transfer, timeoutMilliseconds: Int(remaining))
            }
            if hosts[key]?.isUnused == true {
                hosts[key] = nil
            }
        }
    }

    /// Fails the held transfers whose timeout has run out, drops the cancelled
    /// ones, and returns how long the thread may sleep before the next
    /// deadline, in milliseconds (5 s at most).
    private func expireHeld() -> Int32 {
        guard heldCount > 0 else { return 5000 }
        let now = Self.monotonicNanoseconds()
        if now >= nextHeldDeadline {
            var earliest = Int64.max
            var expired: [CurlTransfer] = []
            for key in Array(hosts.keys) {
                guard var queue = hosts.removeValue(forKey: key) else { continue }
                if queue.hasHeld {
                    var kept: [CurlTransfer] = []
                    for transfer in queue.held[queue.next...] {
                        if transfer.heldCancelled {
                            transfer.heldDeadline = 0
                        } else if transfer.heldDeadline <= now {
                            transfer.heldDeadline = 0
                            expired.append(transfer)
                        } else {
                            earliest = Swift.min(earliest, transfer.heldDeadline)
                            kept.append(transfer)
                        }
                    }
                    heldCount -= queue.held.count - queue.next - kept.count
                    queue.held = kept
                    queue.next = 0
                }
                if !queue.isUnused {
                    hosts[key] = queue
                }
            }
            nextHeldDeadline = earliest
            for transfer in expired {
                resume(transfer, with: .failure(Self.heldTooLong))
            }
        }
        guard nextHeldDeadline != .max else { return 5000 }
        let milliseconds = (nextHeldDeadline - now + 999_999) / 1_000_000
        return Int32(Swift.min(Swift.max(milliseconds, 1), 5000))
    }

    /// The error of a transfer whose timeout ran out while it was held back.
    private static let heldTooLong = HTTPTransportError.timeout.with(
        message: "\(HTTPTransportError.timeout.message): no connection to the host became free in time")

    /// Puts `transfer` into the multi handle, or fails it when libcurl refuses;
    /// `timeoutMilliseconds` replaces its timeout (what is left after being held back).
    private func start(_ transfer: CurlTransfer, timeoutMilliseconds: Int? = nil) {
        guard let easy = idleHandles.popLast() ?? CurlEasyHandle() else {
            resume(transfer, with: .failure(.other("libcurl could not create an easy handle")))
            return
        }
        let context = Unmanaged.passUnretained(transfer).toOpaque()
        var code = easy.configure(for: transfer, context: context, configuration: configuration)
        if code == CURLE_OK, let timeoutMilliseconds {
            code = easy.shortenTimeout(toMilliseconds: timeoutMilliseconds)
        }
        guard code == CURLE_OK else {
            let message = easy.message(for: code)
            recycle(easy)
            resume(transfer, with: .failure(CurlTransport.error(for: code, message: message)))
            return
        }
        let added = ccurl_multi_add_handle(multi, easy.handle)
        guard added == CURLM_OK else {
            recycle(easy)
            let message = String(cString: ccurl_multi_strerror(added))
            resume(transfer, with: .failure(.other("libcurl refused the transfer: \(message)")))
            return
        }
        transfer.easy = easy
        transfer.activeIndex = active.count
        active.append(transfer)
        if countsHosts {
            hosts[transfer.hostKey, default: HostQueue()].running += 1
            transfer.isCountedForHost = true
        }
    }

    /// Completes every transfer libcurl reports done (a leading caller's turn).
    private func collectCompleted() {
        collectCompleted(into: &leadFinished)
        resume(&leadFinished)
    }

    /// A transfer taken out of libcurl and its outcome, its caller not resumed yet.
    private typealias Finished = (CurlTransfer, Result<HTTPTransportResponse, HTTPTransportError>)

    /// Takes every transfer libcurl reports done out of libcurl, into `completed`.
    private func collectCompleted(into completed: inout [Finished]) {
        var remaining: Int32 = 0
        while let message = ccurl_multi_info_read(multi, &remaining) {
            guard ccurl_msg_is_done(message) != 0, let handle = message.pointee.easy_handle else { continue }
            let code = ccurl_msg_result(message)
            var context: UnsafeMutableRawPointer?
            guard ccurl_easy_getinfo_pointer(handle, CURLINFO_PRIVATE, &context) == CURLE_OK, let context else {
                continue
            }
            let transfer = Unmanaged<CurlTransfer>.fromOpaque(context).takeUnretainedValue()
            let result = transfer.result(for: code)
            detach(transfer)
            completed.append((transfer, result))
        }
    }

    /// Resumes the callers of `finished` and empties it. Touches no libcurl
    /// state, so it may run after the engine thread has given libcurl up.
    private func resume(_ finished: inout [Finished]) {
        // Taken out rather than iterated (which copies, and retains, every
        // response on its way to its caller); the array keeps its capacity.
        while let (transfer, result) = finished.popLast() {
            resume(transfer, with: consume result)
        }
    }

    /// Takes `transfer` out of libcurl and returns its handle to the pool.
    private func detach(_ transfer: CurlTransfer) {
        guard let easy = transfer.easy else { return }
        _ = ccurl_multi_remove_handle(multi, easy.handle)
        let index = transfer.activeIndex
        let last = active.removeLast()
        if last !== transfer {
            active[index] = last
            last.activeIndex = index
        }
        transfer.easy = nil
        transfer.activeIndex = -1
        recycle(easy)
        guard transfer.isCountedForHost else { return }
        transfer.isCountedForHost = false
        defer {
            if hosts.isEmpty { countsHosts = false }
        }
        // One hash of the key, not two or three: found once, then changed or removed in place.
        let key = transfer.hostKey
        if let index = hosts.index(forKey: key) {
            let queue = hosts.values[index]
            if queue.running <= 1 && !queue.hasHeld {
                hosts.remove(at: index)
            } else {
                hosts.values[index].running -= 1
                // A limit lowered below `running` (`shareLimits`) is reached
                // one ending at a time, so this catches it too.
                if queue.hasHeld && queue.running == maxTransfersPerHost.load(ordering: .relaxed) {
                    hostsWithRoom.append(key)
                }
            }
        }
    }

    /// Keeps a handle for reuse. It still points at the transfer's header list,
    /// body and context, which libcurl reads only during a transfer; the next
    /// `configure` replaces them.
    private func recycle(_ easy: CurlEasyHandle) {
        if idleHandles.count < Swift.max(configuration.maxConnections, 1) {
            idleHandles.append(easy)
        }
    }

    /// Resumes the caller unless a cancellation (or shutdown) already did; a
    /// caller without a continuation yet (it led) finds the result in the state.
    private func resume(_ transfer: consuming CurlTransfer, with result: consuming Result<HTTPTransportResponse, HTTPTransportError>) {
        lock.lock()
        switch transfer.state {
        case .waiting(let continuation):
            transfer.state = .finished
            lock.unlock()
            // Let go first: the waiting caller holds the transfer until it is
            // resumed, so it frees the transfer (and the caller's memory in it)
            // on its own thread rather than this thread freeing it into the
            // caller's malloc arena under that arena's lock (a futex call per
            // request with many callers).
            _ = consume transfer
            Self.resume(continuation, with: result)
        case .leading:
            transfer.state = .completed(consume result)
            lock.unlock()
        case .created, .cancelledEarly, .completed, .finished:
            lock.unlock()
        }
    }

    /// Resumes a caller with its transfer's outcome, moved into the
    /// continuation rather than mapped (`mapError` copies the response).
    @inline(__always)
    private static func resume(
        _ continuation: CurlTransfer.Continuation, with result: consuming Result<HTTPTransportResponse, HTTPTransportError>
    ) {
        switch consume result {
        case .success(let response): continuation.resume(returning: response)
        case .failure(let error): continuation.resume(throwing: error)
        }
    }

    /// Fails everything queued or running, frees every handle, and lets the waiters of `stopAndWait` go.
    private func shutDown(queued: [CurlTransfer]) {
        for transfer in queued {
            resume(transfer, with: .failure(.shutDown))
        }
        while let transfer = active.last {
            detach(transfer)
            resume(transfer, with: .failure(.shutDown))
        }
        for queue in hosts.values {
            for transfer in queue.held[queue.next...] where !transfer.heldCancelled {
                resume(transfer, with: .failure(.shutDown))
            }
        }
        hosts.removeAll()
        countsHosts = false
        hostsWithRoom.removeAll()
        heldCount = 0
        idleHandles.removeAll()
        // No other thread touches `multi` now: wakeups need `sleeping`, which stays false once stopping.
        ccurl_multi_cleanup(multi)

        lock.lock()
        multiCleanedUp = true
        phase = .stopped
        // Transfers cancelled meanwhile were resumed by `cancel`; their handles are gone above.
        cancelled.removeAll()
        let waiters = stopWaiters
        stopWaiters.removeAll()
        let leftover = jobs
        jobs.removeAll()
        lock.unlock()
        // Jobs enqueued from now on go to the global executor (see `enqueue`).
        for job in leftover {
            globalConcurrentExecutor.enqueue(job)
        }
        for waiter in waiters {
            waiter.resume()
        }
    }
}
