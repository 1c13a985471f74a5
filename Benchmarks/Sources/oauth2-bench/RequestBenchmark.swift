import BenchCore
import BenchReport
import OAuth2

/// What the callers send through.
enum Layer: String {
    /// `OAuth2Client.send`: the token, signing, the 401 analysis, then the transport.
    case client
    /// `CurlTransport.send` of a request signed once beforehand: the
    /// transport alone, so that the client's share is the difference.
    case transport
}

/// Sends one request: the client or the transport itself (``Layer``); a
/// generic parameter, so that neither path pays for the choice.
protocol RequestSender: Sendable {
    func send(_ request: HTTPTransportRequest) async throws -> HTTPTransportResponse
}

extension OAuth2Client: RequestSender {}
extension CurlTransport: RequestSender {}

/// Where the callers' tasks run.
enum CallerExecutor: String {
    /// Swift's global concurrent executor, as for any task.
    case global
    /// The transport's thread (`CurlTransport.executor`).
    case transport
}

/// Scenarios 1 and 2: one client-credentials token request, then `requests`
/// signed GETs through `OAuth2Client.send`, from `concurrency` callers that
/// share one client (each sends its share one after the other).
///
/// With a file or PostgreSQL store (`store`), the grant saves the token
/// there; the client keeps it in memory, so the requests never touch the store.
enum RequestBenchmark {
    static func run(
        target: BenchTarget,
        requests: Int,
        concurrency: Int,
        executor: CallerExecutor,
        transportConfiguration: CurlTransport.Configuration = CurlTransport.Configuration(),
        store: BenchStore = .memory,
        layer: Layer = .client
    ) async throws -> Report {
        try await store.with(configuration: target.configuration()) { tokenStore in
            try await run(
                target: target, requests: requests, concurrency: concurrency, executor: executor,
                transportConfiguration: transportConfiguration, layer: layer,
                tokenStore: tokenStore, name: (concurrency == 1 ? "sequential" : "concurrent") + store.suffix
            )
        }
    }

    private static func run(
        target: BenchTarget,
        requests: Int,
        concurrency: Int,
        executor: CallerExecutor,
        transportConfiguration: CurlTransport.Configuration,
        layer: Layer,
        tokenStore: any TokenStore,
        name: String
    ) async throws -> Report {
        let cpuStart = ProcessMetrics.cpuSeconds()
        let transport = CurlTransport(configuration: transportConfiguration)
        let client = try target.provider(transport: transport, store: tokenStore).client(account: "bench")
        _ = try await client.authenticate(.clientCredentials)

        let request = target.resourceRequest
        let start = ProcessMetrics.nanoseconds()
        let preferred = executor == .transport ? transport.executor : nil
        let (latencies, errors) = try await withTaskExecutorPreference(preferred) {
            switch layer {
            case .client:
                return try await sendAll(sender: client, request: request, requests: requests, concurrency: concurrency)
            case .transport:
                var signed = request
                signed.headers[.authorization] = "Bearer \(try await client.token().accessToken.value)"
                return try await sendAll(sender: transport, request: signed, requests: requests, concurrency: concurrency)
            }
        }
        let seconds = Double(ProcessMetrics.nanoseconds() - start) / 1e9
        await transport.shutdown()

        return Report(
            scenario: (executor == .transport ? name + "-on-transport" : name) + (layer == .transport ? "-transport-layer" : ""),
            requests: requests,
            concurrency: concurrency,
            errors: errors,
            seconds: seconds,
            latencies: latencies,
            cpuSeconds: ProcessMetrics.cpuSeconds() - cpuStart
        )
    }

    /// Sends `requests` requests from `concurrency` callers; returns every
    /// latency (unless `recording` is off) and the count of non-200 answers.
    static func sendAll(
        sender: some RequestSender,
        request: HTTPTransportRequest,
        requests: Int,
        concurrency: Int,
        recording: Bool = true
    ) async throws -> (Latencies, Int) {
        if concurrency <= 1 {
            return try await caller(sender: sender, request: request, count: requests, recording: recording)
        }
        return try await withThrowingTaskGroup(of: (Latencies, Int).self) { group in
            for index in 0..<concurrency {
                let count = requests / concurrency + (index < requests % concurrency ? 1 : 0)
                group.addTask { try await caller(sender: sender, request: request, count: count, recording: recording) }
            }
            var all = Latencies(capacity: recording ? requests : 0)
            var errors = 0
            for try await (latencies, failed) in group {
                all.merge(latencies)
                errors += failed
            }
            return (all, errors)
        }
    }

    /// One caller: `count` sends, one after the other.
    static func caller(
        sender: some RequestSender, request: HTTPTransportRequest, count: Int, recording: Bool
    ) async throws -> (Latencies, Int) {
        var latencies = Latencies(capacity: recording ? count : 0)
        var errors = 0
        for _ in 0..<count {
            let started = ProcessMetrics.nanoseconds()
            let response = try await sender.send(request)
            if recording {
                latencies.record(ProcessMetrics.nanoseconds() - started)
            }
            if response.status != 200 { errors += 1 }
        }
        return (latencies, errors)
    }
}
