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
/// (``lead(_:afterYield:)``, in CurlEngine+Lead.swift), for at most
/// ``CurlTransport/Configuration/callerDrivenWait``: a request that completes
/// in that time costs no thread hand-off at all (``LeadPolicy`` says when a
/// caller may not lead). The engine thread gives libcurl up *before* it
/// resumes the callers of the last transfers, so a caller that sends again at
/// once finds it free. As soon as anyone else queues work, or the time is up,
/// a leading caller hands `multi` to the engine thread and waits for its
/// response like everyone else.
///
/// With one CPU (``yieldsBeforeLeading``) a caller yields before it leads
/// when other callers seem to be sending, and after
/// ``LeadPolicy/maxLeadsInARow`` leads without one anyway. The requests the
/// other tasks queue meanwhile wake nobody: they could not run while it
/// drives, so its lead starts them along with its own, and the one CPU goes
/// to libcurl, the server and the callers instead of to waking the engine
/// thread and switching to it. The others' callers are resumed as their
/// answers come; what is still running when the leader's own answer comes
/// goes to the engine thread.
///
/// The driver gives libcurl at most ``CurlTransport/Configuration/maxConnectionsPerHost``
/// transfers per host (half once a second engine has started beside it);
/// ``HostAdmission`` holds the others back, in order, each until one to its
/// host ends or its own timeout runs out.
///
/// The decisions are pure values the engine keeps and carries out:
/// ``LeadPolicy`` (whether a caller may lead, and the pauses after leads
/// that did not pay) under `lock`, ``HostAdmission`` (the per-host limit)
/// with the driver. A transfer is completed by moving its state on under the
/// lock and resuming the caller outside it, so every caller is resumed
/// exactly once by whoever wins that move. Each turn the engine thread runs
/// the jobs of tasks that prefer it as their executor, then, when it drives,
/// starts what is queued and drives libcurl.
final class CurlEngine: TaskExecutor, @unchecked Sendable {
    // @unchecked: the fields marked "guarded" are only touched under `lock`;
    // `multi`, `active`, `pool` and `admission` belong to the driver alone,
    // and change hands only through `driver`, under `lock`. They are not
    // private only because the lead (CurlEngine+Lead.swift) and the test
    // accessors (CurlEngine+Testing.swift) live in files of their own.

    /// The life of the engine. Guarded.
    enum Phase {
        /// Accepting requests. → `stopping`.
        case running
        /// `stop()` was called; the thread fails what is left and exits. → `stopped`.
        case stopping
        /// The thread has exited and every handle is gone. Terminal.
        case stopped
    }

    /// Who drives libcurl. Guarded.
    enum Driver {
        /// The engine thread. → `nobody` (when nothing is in flight nor queued).
        case engine
        /// Nobody: nothing is in flight; the engine thread is parked or about to be.
        /// → `engine` (work arrived), → `caller` (``lead(_:afterYield:)``).
        case nobody
        /// A caller, on its own thread, for its one transfer. → `engine`, → `nobody`.
        case caller
    }

    private let configuration: CurlTransport.Configuration
    let multi: UnsafeMutableRawPointer
    let lock = Lock()
    /// `driver == .nobody`, readable without the lock: a caller that finds it
    /// false (the engine is busy, the usual case with concurrent callers)
    /// queues its request without taking the lock twice. Only a hint: `lead`
    /// checks `driver` again under the lock.
    let nobodyDrives = Atomic<Bool>(false)
    /// Where the engine thread parks while it does not drive and has no jobs.
    let parked = LockCondition()
    /// How long a caller may drive its own transfer, in nanoseconds; 0: never.
    let callerDrivenNanoseconds: Int64

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
    /// instead of each waking the engine thread for its own.
    let yieldsBeforeLeading: Bool
    /// A caller has claimed the next lead and is yielding first (``claimLead()``).
    let leadClaimed = Atomic<Bool>(false)
    /// With one CPU: whether other callers seem to be sending too (a lead
    /// took their requests along, or one was queued while nobody could lead),
    /// so that a caller yields before it leads. A lead after a yield that
    /// finds nothing queued clears it.
    let othersMaySend = Atomic<Bool>(false)
    /// With one CPU: leads without a yield since the last yield; after
    /// ``LeadPolicy/maxLeadsInARow`` of them a caller yields, so that other tasks ready
    /// on the one thread run.
    let leadsWithoutYield = Atomic<Int>(0)

    // The mutable state below, a transfer's and an easy handle's, is
    // `@exclusivity(unchecked)`: Swift's run-time check that two accesses to
    // a class property never overlap took 37 calls into the runtime per
    // request, about a microsecond of CPU with one CPU. Each property is touched under `lock` or by the one
    // driver, and no access spans a call that could reach the same property
    // again: libcurl's callbacks, inside `curl_multi_perform`, touch only the
    // transfer's response fields, which nothing else accesses meanwhile. The
    // tests ran with the check on before it went, and never tripped it.

    // Guarded by `lock`.
    @exclusivity(unchecked) var phase = Phase.running
    /// Whether the engine thread has already cleaned up `multi`.
    @exclusivity(unchecked) private var multiCleanedUp = false
    @exclusivity(unchecked) var incoming: [CurlTransfer] = []
    @exclusivity(unchecked) var cancelled: [CurlTransfer] = []
    /// Whether the thread is in (or about to enter) `curl_multi_poll` and needs a wakeup.
    @exclusivity(unchecked) private var sleeping = false
    @exclusivity(unchecked) var driver = Driver.engine {
        didSet { nobodyDrives.store(driver == .nobody, ordering: .relaxed) }
    }
    /// Whether a leading caller is in (or about to enter) `curl_multi_poll`.
    @exclusivity(unchecked) var callerPolling = false
    /// Whether the engine thread waits on `parked`.
    @exclusivity(unchecked) var engineParked = false
    /// Whether the thread has failed what was left, freed every handle and
    /// let `stopAndWait` return.
    var hasStopped: Bool {
        lock.withLock { if case .stopped = phase { true } else { false } }
    }
    /// Whether nothing is in flight nor queued. Read under the lock.
    var isIdleLocked: Bool {
        driver == .nobody && incoming.isEmpty && cancelled.isEmpty
    }
    /// Whether a caller may lead, and the pauses after leads that did not pay.
    @exclusivity(unchecked) var leadPolicy: LeadPolicy
    @exclusivity(unchecked) private var stopWaiters: [CheckedContinuation<Void, Never>] = []
    /// Jobs of tasks that prefer this engine as their executor (``CurlTransport/executor``).
    @exclusivity(unchecked) private var jobs: [UnownedJob] = []

    // The driver only.
    @exclusivity(unchecked) var active: [CurlTransfer] = []
    /// What a leading caller's turn completed; kept, emptied, between turns,
    /// so that a lead allocates no array.
    @exclusivity(unchecked) private var leadFinished: [Finished] = []
    /// The requests a caller found queued after its yield, which it starts
    /// with its own (``lead(_:afterYield:)``); kept, emptied, between leads.
    @exclusivity(unchecked) var leadCompany: [CurlTransfer] = []
    @exclusivity(unchecked) private var pool: CurlEasyHandlePool
    /// The transfers each host has in libcurl, and those held back.
    @exclusivity(unchecked) var admission = HostAdmission<CurlTransfer>()
    /// ``CurlTransport/Configuration/maxConnectionsPerHost``, at least 1,
    /// until ``shareLimits(transfersPerHost:connections:)`` lowers it.
    /// Read by the driver.
    let maxTransfersPerHost: Atomic<Int>
    /// libcurl's connection cache size (`CURLMOPT_MAXCONNECTS`):
    /// ``CurlTransport/Configuration/maxConnections``, at least 1, until
    /// ``shareLimits(transfersPerHost:connections:)`` lowers it; the driver
    /// hands it to libcurl (``applyConnectionCacheSize()``).
    let connectionCacheSize: Atomic<Int>
    /// The cache size libcurl has. Driver only.
    @exclusivity(unchecked) private var appliedConnectionCacheSize: Int
    /// The engine thread, set once it is created.
    @exclusivity(unchecked) private var thread = pthread_t()

    /// Whether the caller runs on the engine thread (a task that prefers it as executor).
    var isCurrentThread: Bool {
        pthread_equal(pthread_self(), thread) != 0
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
        let yieldsBeforeLeading = (allowedCPUs ?? Int(ccurl_allowed_cpus())) == 1
        self.yieldsBeforeLeading = yieldsBeforeLeading
        leadPolicy = LeadPolicy(yieldsBeforeLeading: yieldsBeforeLeading)
        pool = CurlEasyHandlePool(capacity: configuration.maxConnections)
        let maxConnections = Swift.max(configuration.maxConnections, 1)
        _ = ccurl_multi_setopt_long(multi, CURLMOPT_MAXCONNECTS, maxConnections)
        connectionCacheSize = Atomic(maxConnections)
        appliedConnectionCacheSize = maxConnections
        // The per-host limit is ours (`admission`), not libcurl's: see HostAdmission.
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
        #if DEBUG
        CurlEngineProbes.engineStarted(configuration) { [weak self] in self?.hasStopped ?? true }
        #endif
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
            // Not started yet, it never will be.
            transfer.claimCancellation()
            transfer.state = .finished
            if case .running = phase {
                cancelled.append(transfer)
            }
            wakeIfSleepingLocked()
            lock.unlock()
        case .waiting(let continuation):
            // Before its caller is told: a driver that took it from the queue
            // but has not started it yet then never does.
            transfer.claimCancellation()
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
    func wakeIfSleepingLocked() {
        if sleeping || callerPolling {
            sleeping = false
            _ = ccurl_multi_wakeup(multi)
        }
        if engineParked {
            parked.signal()
        }
    }

    /// How many requests a leading caller has started along with its own
    /// (queued while it yielded, with one CPU). Guarded. For tests.
    @exclusivity(unchecked) var requestsLedAlong = 0

    /// Lowers the connection limits to this engine's share, when a second
    /// engine starts beside it (``CurlTransport``). Transfers to a host above
    /// its new limit run on; the next ones wait until it has fewer.
    func shareLimits(transfersPerHost: Int, connections: Int) {
        maxTransfersPerHost.store(Swift.max(transfersPerHost, 1), ordering: .relaxed)
        connectionCacheSize.store(Swift.max(connections, 1), ordering: .relaxed)
    }

    /// Gives libcurl the connection cache size ``shareLimits(transfersPerHost:connections:)``
    /// set, if it changed. Driver only.
    @inline(__always)
    func applyConnectionCacheSize() {
        let size = connectionCacheSize.load(ordering: .relaxed)
        if size != appliedConnectionCacheSize {
            appliedConnectionCacheSize = size
            _ = ccurl_multi_setopt_long(multi, CURLMOPT_MAXCONNECTS, size)
        }
    }

    /// CLOCK_MONOTONIC in nanoseconds: cheap, and never goes back.
    static func monotonicNanoseconds() -> Int64 {
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
                } else {
                    // Its caller has been resumed; if it is held back, it leaves the queue.
                    _ = admission.cancelled(transfer)
                }
            }
            cancelBatch.removeAll(keepingCapacity: true)
            if admission.needsAttention {
                _ = attendToHeld()
            }
            for transfer in batch {
                admit(transfer)
            }
            batch.removeAll(keepingCapacity: true)

            _ = ccurl_multi_perform(multi, &stillRunning)
            collectCompleted(into: &finished)
            var pollMilliseconds = Self.longestPoll
            if admission.needsAttention {
                pollMilliseconds = attendToHeld()
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

    /// The longest the engine thread waits in `curl_multi_poll` with nothing
    /// due: a wakeup ends the wait whenever there is something to do.
    private static let longestPoll: Int32 = 5000

    /// Starts `transfer` when its host has room in libcurl, else holds it
    /// back behind the others to that host.
    func admit(_ transfer: CurlTransfer) {
        let limit = maxTransfersPerHost.load(ordering: .relaxed)
        // The clock is read only when a request may be held back.
        let now = active.count >= limit || admission.heldCount > 0 ? Self.monotonicNanoseconds() : 0
        switch admission.admit(transfer, timeoutMilliseconds: transfer.timeoutMilliseconds, inLibcurl: active, limit: limit, now: now) {
        case .start: start(transfer)
        case .held: break
        }
    }

    /// Starts the held transfers whose host has room, oldest first, and fails
    /// those whose timeout has run out, wherever they wait. Returns how long
    /// the driver may wait in libcurl before the next held transfer's
    /// deadline, in milliseconds (``longestPoll`` at most).
    func attendToHeld() -> Int32 {
        let now = Self.monotonicNanoseconds()
        let limit = maxTransfersPerHost.load(ordering: .relaxed)
        while let action = admission.nextAction(limit: limit, now: now) {
            switch action {
            case .start(let transfer, let timeoutMilliseconds):
                start(transfer, timeoutMilliseconds: timeoutMilliseconds)
            case .timeOut(let transfer):
                resume(transfer, with: .failure(Self.heldTooLong))
            }
        }
        return admission.millisecondsToNextDeadline(now: now, longest: Self.longestPoll)
    }

    /// The error of a transfer whose timeout ran out while it was held back.
    private static let heldTooLong = HTTPTransportError.timeout.with(
        message: "\(HTTPTransportError.timeout.message): no connection to the host became free in time")

    /// Puts `transfer` into the multi handle, or fails it when libcurl refuses;
    /// `timeoutMilliseconds` replaces its timeout (what is left after being held back).
    func start(_ transfer: CurlTransfer, timeoutMilliseconds: Int? = nil) {
        #if DEBUG
        CurlEngineProbes.beforeStart(transfer.urlString)
        #endif
        // Cancelled since it was taken from the queue: its caller has been
        // told so (or, leading, is told when it sees `finished`); nothing to undo.
        guard transfer.claimStart() else { return }
        guard let easy = pool.take() else {
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
            pool.recycle(easy)
            resume(transfer, with: .failure(CurlTransport.error(for: code, message: message)))
            return
        }
        let added = ccurl_multi_add_handle(multi, easy.handle)
        guard added == CURLM_OK else {
            pool.recycle(easy)
            let message = String(cString: ccurl_multi_strerror(added))
            resume(transfer, with: .failure(.other("libcurl refused the transfer: \(message)")))
            return
        }
        transfer.easy = easy
        transfer.activeIndex = active.count
        active.append(transfer)
        admission.started(transfer)
    }

    /// Completes every transfer libcurl reports done (a leading caller's turn).
    func collectCompleted() {
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
        pool.recycle(easy)
        admission.ended(transfer, limit: maxTransfersPerHost.load(ordering: .relaxed))
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
            // caller's malloc arena under that arena's lock.
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
    static func resume(
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
        for transfer in admission.removeAll() {
            resume(transfer, with: .failure(.shutDown))
        }
        pool.removeAll()
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
