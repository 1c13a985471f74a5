#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

import CCurl

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
/// Only the engine thread calls libcurl (apart from `curl_multi_wakeup`, which
/// is made for other threads). Other threads put work in `incoming`,
/// `cancelled` or `jobs` under `lock` and wake the thread when it sleeps in
/// `curl_multi_poll`. The thread owns the easy handles, the active transfers and
/// the pool of idle handles; it completes a transfer by moving its state to
/// `finished` under the lock and resuming the caller outside it, so every
/// caller is resumed exactly once by whoever wins that move. Each turn it runs
/// the jobs of tasks that prefer it as their executor, then starts what is
/// queued, then drives libcurl.
final class CurlEngine: TaskExecutor, @unchecked Sendable {
    // @unchecked: the fields marked "guarded" are only touched under `lock`;
    // `multi`, `active` and `idleHandles` belong to the engine thread alone.

    /// The life of the engine. Guarded.
    private enum Phase {
        /// Accepting requests. → `stopping`.
        case running
        /// `stop()` was called; the thread fails what is left and exits. → `stopped`.
        case stopping
        /// The thread has exited and every handle is gone. Terminal.
        case stopped
    }

    private let configuration: CurlTransport.Configuration
    private let multi: UnsafeMutableRawPointer
    private let lock = Lock()

    // Guarded by `lock`.
    private var phase = Phase.running
    /// Whether the engine thread has already cleaned up `multi`.
    private var multiCleanedUp = false
    private var incoming: [CurlTransfer] = []
    private var cancelled: [CurlTransfer] = []
    /// Whether the thread is in (or about to enter) `curl_multi_poll` and needs a wakeup.
    private var sleeping = false
    private var stopWaiters: [CheckedContinuation<Void, Never>] = []
    /// Jobs of tasks that prefer this engine as their executor (``CurlTransport/executor``).
    private var jobs: [UnownedJob] = []

    // Engine thread only.
    private var active: [CurlTransfer] = []
    private var idleHandles: [CurlEasyHandle] = []

    /// Creates the multi handle and starts the thread.
    ///
    /// - Throws: ``HTTPTransportError/other(_:)`` when libcurl or the thread cannot be set up.
    init(configuration: CurlTransport.Configuration) throws(HTTPTransportError) {
        if let error = CurlGlobal.initializationError {
            throw error
        }
        guard let multi = curl_multi_init() else {
            throw .other("libcurl could not create a multi handle")
        }
        self.configuration = configuration
        self.multi = multi
        let maxConnections = Swift.max(configuration.maxConnections, 1)
        _ = ccurl_multi_setopt_long(multi, CURLMOPT_MAXCONNECTS, maxConnections)
        _ = ccurl_multi_setopt_long(multi, CURLMOPT_MAX_HOST_CONNECTIONS, Swift.max(configuration.maxConnectionsPerHost, 1))
        incoming.reserveCapacity(16)
        cancelled.reserveCapacity(16)

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
    }

    deinit {
        // Reached only after the thread exited (it holds a reference), or when it never started.
        let cleanedUp = lock.withLock { multiCleanedUp }
        if !cleanedUp {
            curl_multi_cleanup(multi)
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
            wakeIfSleepingLocked()
            outcome = .queued
        case (_, .cancelledEarly):
            transfer.state = .finished
            outcome = .cancelled
        case (.stopping, .created), (.stopped, .created):
            transfer.state = .finished
            outcome = .shutDown
        case (_, .waiting), (_, .finished):
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
        case .waiting(let continuation):
            transfer.state = .finished
            if case .running = phase {
                cancelled.append(transfer)
                wakeIfSleepingLocked()
            }
            lock.unlock()
            continuation.resume(throwing: CancellationError())
        case .cancelledEarly, .finished:
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

    /// Wakes the thread out of `curl_multi_poll`. Called under the lock, so the
    /// thread cannot be cleaning up the multi handle meanwhile.
    private func wakeIfSleepingLocked() {
        if sleeping {
            sleeping = false
            _ = curl_multi_wakeup(multi)
        }
    }

    // MARK: - Engine thread

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

        while true {
            lock.lock()
            sleeping = false
            swap(&jobs, &jobBatch)
            lock.unlock()
            // First the tasks that run here: what they submit starts in this same turn.
            for job in jobBatch {
                job.runSynchronously(on: asUnownedTaskExecutor())
            }
            jobBatch.removeAll(keepingCapacity: true)

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
            for transfer in batch {
                start(transfer)
            }
            batch.removeAll(keepingCapacity: true)
            for transfer in cancelBatch where transfer.easy != nil {
                detach(transfer)
            }
            cancelBatch.removeAll(keepingCapacity: true)

            _ = curl_multi_perform(multi, &stillRunning)
            collectCompleted()

            lock.lock()
            let idle = incoming.isEmpty && cancelled.isEmpty && jobs.isEmpty && { if case .running = phase { true } else { false } }()
            sleeping = idle
            lock.unlock()
            if idle {
                // libcurl shortens the wait to its own next timeout; a wakeup ends it early.
                _ = curl_multi_poll(multi, nil, 0, 5000, nil)
            }
        }
    }

    /// Puts `transfer` into the multi handle, or fails it when libcurl refuses.
    private func start(_ transfer: CurlTransfer) {
        guard let easy = idleHandles.popLast() ?? CurlEasyHandle() else {
            resume(transfer, with: .failure(.other("libcurl could not create an easy handle")))
            return
        }
        let context = Unmanaged.passUnretained(transfer).toOpaque()
        let code = easy.configure(for: transfer, context: context, configuration: configuration)
        guard code == CURLE_OK else {
            let message = easy.message(for: code)
            recycle(easy)
            resume(transfer, with: .failure(CurlTransport.error(for: code, message: message)))
            return
        }
        let added = curl_multi_add_handle(multi, easy.handle)
        guard added == CURLM_OK else {
            recycle(easy)
            let message = String(cString: curl_multi_strerror(added))
            resume(transfer, with: .failure(.other("libcurl refused the transfer: \(message)")))
            return
        }
        transfer.easy = easy
        transfer.activeIndex = active.count
        active.append(transfer)
    }

    /// Completes every transfer libcurl reports done.
    private func collectCompleted() {
        var remaining: Int32 = 0
        while let message = curl_multi_info_read(multi, &remaining) {
            guard ccurl_msg_is_done(message) != 0, let handle = message.pointee.easy_handle else { continue }
            let code = ccurl_msg_result(message)
            var context: UnsafeMutableRawPointer?
            guard ccurl_easy_getinfo_pointer(handle, CURLINFO_PRIVATE, &context) == CURLE_OK, let context else {
                continue
            }
            let transfer = Unmanaged<CurlTransfer>.fromOpaque(context).takeUnretainedValue()
            let result = transfer.result(for: code)
            detach(transfer)
            resume(transfer, with: result)
        }
    }

    /// Takes `transfer` out of libcurl and returns its handle to the pool.
    private func detach(_ transfer: CurlTransfer) {
        guard let easy = transfer.easy else { return }
        _ = curl_multi_remove_handle(multi, easy.handle)
        let index = transfer.activeIndex
        let last = active.removeLast()
        if last !== transfer {
            active[index] = last
            last.activeIndex = index
        }
        transfer.easy = nil
        transfer.activeIndex = -1
        recycle(easy)
    }

    /// Keeps a handle for reuse. It still points at the transfer's header list,
    /// body and context, which libcurl reads only during a transfer; the next
    /// `configure` replaces them.
    private func recycle(_ easy: CurlEasyHandle) {
        if idleHandles.count < Swift.max(configuration.maxConnections, 1) {
            idleHandles.append(easy)
        }
    }

    /// Resumes the caller unless a cancellation (or shutdown) already did.
    private func resume(_ transfer: CurlTransfer, with result: Result<HTTPTransportResponse, HTTPTransportError>) {
        lock.lock()
        guard case .waiting(let continuation) = transfer.state else {
            lock.unlock()
            return
        }
        transfer.state = .finished
        lock.unlock()
        continuation.resume(with: result.mapError { $0 })
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
        idleHandles.removeAll()
        // No other thread touches `multi` now: wakeups need `sleeping`, which stays false once stopping.
        curl_multi_cleanup(multi)

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
