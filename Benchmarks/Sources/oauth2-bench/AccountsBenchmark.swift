import BenchCore
import BenchReport
import OAuth2

/// Per-account memory (issue 15): one provider (`InMemoryTokenStore`), then
/// accounts added until each of `sizes` is reached, each with its own client
/// holding a token from a client-credentials grant (through a transport that
/// answers at once, so nothing but the framework's state grows). At each size
/// it reports the RSS growth per account since the first account and the
/// time to sign and send a request through a client picked across all the
/// accounts so far: both should stay flat as accounts grow.
///
/// RSS is `VmRSS`: pages the allocator took for the accounts. The clients
/// stay referenced in an array reserved up front, so the array is not counted.
enum AccountsBenchmark {
    static func run(target: BenchTarget, sizes: [Int], iterations: Int) async throws -> [Report] {
        let transport = InstantTransport(tokenURL: target.tokenURL)
        let provider = try target.provider(transport: transport, store: InMemoryTokenStore())
        let request = target.resourceRequest
        let largest = sizes.max() ?? 0
        var clients: [OAuth2Client] = []
        clients.reserveCapacity(largest)
        let names: [String] = (0..<largest).map { "account-\($0)" }

        // The first account, and a send through it: the code paths are warm
        // and their one-time allocations made before the reference RSS.
        clients.append(provider.client(account: names[0]))
        _ = try await clients[0].authenticate(.clientCredentials)
        _ = try await clients[0].send(request)
        let rssAtOne = ProcessMetrics.status("VmRSS") ?? 0

        var reports: [Report] = []
        for size in sizes.sorted() {
            let cpuStart = ProcessMetrics.cpuSeconds()
            while clients.count < size {
                let client = provider.client(account: names[clients.count])
                _ = try await client.authenticate(.clientCredentials)
                clients.append(client)
            }
            let rss = ProcessMetrics.status("VmRSS") ?? 0

            // Sends spread over every account so far (a stride coprime with
            // the size visits them all), timed per batch.
            let batch = ParsingBenchmark.batch
            let batches = Swift.max(iterations / batch, 1)
            var latencies = Latencies(capacity: batches)
            var errors = 0
            var index = 0
            let stride = size > 7919 && size % 7919 != 0 ? 7919 : 1
            let start = ProcessMetrics.nanoseconds()
            for _ in 0..<batches {
                let batchStart = ProcessMetrics.nanoseconds()
                for _ in 0..<batch {
                    let response = try await clients[index].send(request)
                    if response.status != 200 { errors += 1 }
                    index = (index + stride) % size
                }
                latencies.record((ProcessMetrics.nanoseconds() - batchStart) / UInt64(batch))
            }
            let seconds = Double(ProcessMetrics.nanoseconds() - start) / 1e9
            let added = Swift.max(size - 1, 1)
            reports.append(
                Report(
                    scenario: "accounts-\(size)",
                    requests: batches * batch,
                    concurrency: 1,
                    errors: errors,
                    seconds: seconds,
                    latencies: latencies,
                    cpuSeconds: ProcessMetrics.cpuSeconds() - cpuStart,
                    extra: [
                        ("accounts", Double(size)),
                        ("rss_kib", Double(rss)),
                        ("bytes_per_account", size > 1 ? Double(rss - rssAtOne) * 1024 / Double(added) : 0),
                    ]
                ))
        }
        return reports
    }
}
