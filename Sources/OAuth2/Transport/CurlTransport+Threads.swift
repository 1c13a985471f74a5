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
            secondClaimed.compareExchange(expected: false, desired: true, ordering: .relaxed).exchanged
        else { return nil }
        // The first engine takes its share now, before the thread is made:
        // the callers that find the start claimed go on to the first engine
        // meanwhile (a thread takes milliseconds to start, far longer under
        // a sanitizer), and with the whole limits it would open connections
        // that, added to the second engine's, exceed them.
        first.shareLimits(transfersPerHost: share.transfersPerHost, connections: share.connections)
        return secondStart.withLock { () -> CurlEngine? in
            do {
                // `shutdown()` looked first and found none to wait for: none starts.
                guard !isShutDown.load(ordering: .relaxed) else { return nil }
                return second.storeIfNil(try CurlEngine(configuration: secondThread.configuration, allowedCPUs: allowedCPUs))
            } catch {
                // Out of threads or memory: the first engine goes on alone,
                // with the whole limits again.
                first.shareLimits(transfersPerHost: configuration.maxConnectionsPerHost, connections: configuration.maxConnections)
                return nil
            }
        }
    }

    /// Fails every queued and running request with ``HTTPTransportError/shutDown``,
    /// stops the threads, frees every libcurl handle and closes every connection.
    ///
    /// Returns once all of that is done. Later sends throw
    /// ``HTTPTransportError/shutDown``. Calling it again is harmless.
    public func shutdown() async {
        // A second engine being started at this moment is waited for: the lock
        // is held only while one starts (a thread created, once per transport).
        let second = secondStart.withLock {
            isShutDown.store(true, ordering: .relaxed)
            return self.second.load()
        }
        if case .success(let engine) = engine {
            await engine.stopAndWait()
        }
        await second?.stopAndWait()
    }
}
