import BenchCore
import BenchReport
import OAuth2

/// The memory check: `requests` signed requests in one process after
/// `warmup` requests; reports how much the peak RSS grew past the RSS
/// after warm-up (the kernel's VmHWM, reset after warm-up).
///
/// No latencies are recorded: 100,000 of them would take 781 KiB of the
/// benchmark's own, which is not what this measures.
enum MemoryBenchmark {
    static func run(target: BenchTarget, requests: Int, warmup: Int, concurrency: Int) async throws -> Report {
        let cpuStart = ProcessMetrics.cpuSeconds()
        let transport = CurlTransport()
        let client = try target.provider(transport: transport).client(account: "memory")
        _ = try await client.authenticate(.clientCredentials)
        let request = target.resourceRequest

        let (_, warmupErrors) = try await RequestBenchmark.sendAll(
            sender: client, request: request, requests: warmup, concurrency: concurrency, recording: false
        )
        let resetWorked = ProcessMetrics.resetPeakRSS()
        let rssAfterWarmup = ProcessMetrics.status("VmRSS") ?? 0
        let peakBefore = ProcessMetrics.status("VmHWM") ?? 0

        let start = ProcessMetrics.nanoseconds()
        let (latencies, errors) = try await RequestBenchmark.sendAll(
            sender: client, request: request, requests: requests, concurrency: concurrency, recording: false
        )
        let seconds = Double(ProcessMetrics.nanoseconds() - start) / 1e9
        let rssAfter = ProcessMetrics.status("VmRSS") ?? 0
        let peakAfter = ProcessMetrics.status("VmHWM") ?? 0
        await transport.shutdown()

        // Without the reset, VmHWM may still hold a peak from warm-up: growth is then measured against that peak.
        let reference = resetWorked ? rssAfterWarmup : Swift.max(rssAfterWarmup, peakBefore)
        return Report(
            scenario: "memory",
            requests: requests,
            concurrency: concurrency,
            errors: errors + warmupErrors,
            seconds: seconds,
            latencies: latencies,
            cpuSeconds: ProcessMetrics.cpuSeconds() - cpuStart,
            extra: [
                ("rss_after_warmup_kib", Double(rssAfterWarmup)),
                ("peak_rss_after_warmup_kib", Double(peakAfter)),
                ("rss_at_end_kib", Double(rssAfter)),
                ("peak_growth_kib", Double(peakAfter - reference)),
                ("peak_reset", resetWorked ? 1 : 0),
            ]
        )
    }
}
