import BenchCore
import BenchReport
import OAuth2

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Scenario 3: `callers` concurrent `send` calls on an expired token.
///
/// The client gets a token by client credentials (valid for an hour, with a
/// refresh token), then its clock jumps two hours ahead: every caller finds
/// the token expired at once. Refresh must be single-flight: the server must
/// see one token request, however many callers. The count comes from nginx's
/// token log (`tokenLog`), read just before and just after the storm.
enum RefreshStormBenchmark {
    static func run(target: BenchTarget, callers: Int, tokenLog: String?) async throws -> Report {
        let cpuStart = ProcessMetrics.cpuSeconds()
        let transport = CurlTransport()
        let clock = BenchClock()
        let client = try target.provider(transport: transport, clock: clock).client(account: "storm")
        let beforeGrant = tokenLog.map(countLines)
        _ = try await client.authenticate(.clientCredentials)
        clock.advance(bySeconds: 2 * 3600)

        let request = target.resourceRequest
        // nginx logs a request after sending its response, so the grant's line
        // may land after the client already has the token: wait for it.
        var before: Int?
        if let tokenLog {
            before = try await waitForLines(in: tokenLog, atLeast: (beforeGrant ?? 0) + 1)
        }
        let start = ProcessMetrics.nanoseconds()
        let (latencies, errors) = try await storm(client: client, request: request, callers: callers, start: start)
        let seconds = Double(ProcessMetrics.nanoseconds() - start) / 1e9
        let after = tokenLog.map(countLines)
        await transport.shutdown()

        var extra: [(String, Double)] = []
        if let before, let after {
            extra.append(("token_requests", Double(after - before)))
        }
        return Report(
            scenario: "refresh-storm",
            requests: callers,
            concurrency: callers,
            errors: errors,
            seconds: seconds,
            latencies: latencies,
            cpuSeconds: ProcessMetrics.cpuSeconds() - cpuStart,
            extra: extra
        )
    }

    /// `callers` concurrent sends of `request`: each one's time from `start`
    /// until its answer, and the count of answers that were not 200.
    static func storm(client: OAuth2Client, request: HTTPTransportRequest, callers: Int, start: UInt64) async throws -> (Latencies, Int) {
        var latencies = Latencies(capacity: callers)
        var errors = 0
        try await withThrowingTaskGroup(of: (UInt64, Int).self) { group in
            for _ in 0..<callers {
                group.addTask {
                    let response = try await client.send(request)
                    return (ProcessMetrics.nanoseconds() - start, response.status == 200 ? 0 : 1)
                }
            }
            for try await (latency, failed) in group {
                latencies.record(latency)
                errors += failed
            }
        }
        return (latencies, errors)
    }

    /// The line count of `path` once it reaches `count` (2 s at most).
    static func waitForLines(in path: String, atLeast count: Int) async throws -> Int {
        for _ in 0..<200 {
            let lines = countLines(path)
            if lines >= count { return lines }
            try await Task.sleep(for: .milliseconds(10))
        }
        throw BenchError("the token log never showed the client-credentials request")
    }

    /// Lines in a file (nginx writes one per token request), 0 when it cannot be read.
    static func countLines(_ path: String) -> Int {
        guard let file = fopen(path, "r") else { return 0 }
        defer { fclose(file) }
        var count = 0
        while true {
            let character = getc(file)
            if character == EOF { break }
            if character == 0x0A { count += 1 }
        }
        return count
    }
}
