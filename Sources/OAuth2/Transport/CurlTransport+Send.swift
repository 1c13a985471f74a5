import Synchronization

extension CurlTransport {
    /// Sends one request and returns the whole response.
    ///
    /// Any HTTP status is a response, not an error.
    ///
    /// - Throws: `CancellationError` when the Task is cancelled;
    ///   ``HTTPTransportError/unsupportedURL`` or ``HTTPTransportError/invalidRequest``
    ///   before anything is sent (`unsupportedURL` also for a redirect that
    ///   must not be followed); ``HTTPTransportError/shutDown`` after
    ///   ``shutdown()``; otherwise the ``HTTPTransportError`` saying why no
    ///   complete response arrived (`.timeout`, `.connectFailed`, `.tlsFailed`,
    ///   `.responseTooLarge`, `.connectionLost`, `.tooManyRedirects`, `.other`).
    // Into its protocol witness: every async frame is a task allocation and
    // two executor checks, on each request.
    @inline(__always)
    public func send(_ request: HTTPTransportRequest) async throws -> HTTPTransportResponse {
        if request.redirects == .follow {
            return try await sendFollowingRedirects(request)
        }
        let engine = try self.engine.get()
        let inFlight = firstLoad.load(ordering: .relaxed)
        if inFlight >= secondThreadThreshold, inFlight > secondLoad.load(ordering: .relaxed),
            let second = secondEngine(besides: engine, inFlight: inFlight)
        {
            secondLoad.add(1, ordering: .relaxed)
            defer { secondLoad.subtract(1, ordering: .relaxed) }
            return try await send(request, on: second)
        }
        firstLoad.add(1, ordering: .relaxed)
        defer { firstLoad.subtract(1, ordering: .relaxed) }
        return try await send(request, on: engine)
    }

    // In its caller's frame, for the same reason: one async frame fewer a request.
    @inline(__always)
    private func send(_ request: HTTPTransportRequest, on engine: CurlEngine) async throws -> HTTPTransportResponse {
        try Task.checkCancellation()
        let transfer = try CurlTransfer(
            request: request, configuration: configuration, defaultTimeoutMilliseconds: defaultTimeoutMilliseconds)
        return try await withTaskCancellationHandler {
            let outcome: CurlEngine.LeadOutcome
            if engine.yieldsBeforeLeading {
                // One CPU: a caller may yield first, so the tasks ready on this thread go first (see `CurlEngine.claimLead()`).
                switch engine.claimLead() {
                case .afterYield:
                    await Task.yield()
                    outcome = engine.lead(transfer, afterYield: true)
                case .now:
                    outcome = engine.lead(transfer)
                case .no:
                    outcome = .declined
                }
            } else {
                outcome = engine.lead(transfer)
            }
            switch outcome {
            case .completed(let result):
                return try result.get()
            case .cancelled:
                throw CancellationError()
            case .handedOff:
                return try await CurlTransfer.withContinuation { continuation in
                    engine.attach(transfer, continuation: continuation)
                }
            case .declined:
                return try await CurlTransfer.withContinuation { continuation in
                    engine.submit(transfer, continuation: continuation)
                }
            }
        } onCancel: {
            engine.cancel(transfer)
        }
    }
}
