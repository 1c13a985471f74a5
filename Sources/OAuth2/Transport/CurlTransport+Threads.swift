import Synchronization

extension CurlTransport {
    /// The second engine, started if need be; `nil` when this transport keeps
    /// to one thread, the second could not start, or the caller runs on the
    /// first engine's thread (a task on ``executor``, whose requests the first
    /// engine serves without waking a thread).
    ///
    /// It starts only while the first engine has no more than its share of
    /// the limits in flight (`inFlight`, give or take the callers reading it
    /// at the same moment): the first then gets that share, and so has no
    /// more transfers to any host than the share allows, and the two shares
    /// keep the limits.
    func secondEngine(besides first: CurlEngine, inFlight: Int) -> CurlEngine? {
        guard let secondThread, !first.isCurrentThread else { return nil }
        if let running = second.load() {
            return running
        }
        let share = secondThread.firstShare
        guard inFlight <= Swift.min(share.transfersPerHost, share.connections),
            !secondFailed.load(ordering: .relaxed), !isShutDown.load(ordering: .relaxed)
        else { return nil }
        let started: CurlEngine
        do {
            started = try CurlEngine(configuration: secondThread.configuration, allowedCPUs: allowedCPUs)
        } catch {
            // Out of threads or memory: the first engine goes on alone.
            secondFailed.store(true, ordering: .relaxed)
            return nil
        }
        // Before any request goes to the second engine. Another caller that
        // started one at the same time does the same.
        first.shareLimits(transfersPerHost: share.transfersPerHost, connections: share.connections)
        let kept = second.storeIfNil(started)
        if kept !== started {
            // Another caller started one first.
            started.stop()
        }
        atomicMemoryFence(ordering: .sequentiallyConsistent)
        if isShutDown.load(ordering: .sequentiallyConsistent) {
            // `shutdown()` may have looked for a second engine before this one
            // was stored: it stops now, with nothing in flight, and its thread
            // exits by itself.
            kept.stop()
        }
        return kept
    }

    /// Fails every queued and running request with ``HTTPTransportError/shutDown``,
    /// stops the threads, frees every libcurl handle and closes every connection.
    ///
    /// Returns once all of that is done. Later sends throw
    /// ``HTTPTransportError/shutDown``. Calling it again is harmless.
    public func shutdown() async {
        isShutDown.store(true, ordering: .sequentiallyConsistent)
        if case .success(let engine) = engine {
            await engine.stopAndWait()
        }
        atomicMemoryFence(ordering: .sequentiallyConsistent)
        await second.load()?.stopAndWait()
    }
}
