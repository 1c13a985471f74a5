/// One result line: a JSON object, the format the C baseline prints too, read by Benchmarks/bench.py.
package struct Report {
    package var scenario: String
    package var implementation = "swift-oauth2"
    package var requests: Int
    package var concurrency: Int
    package var errors = 0
    package var seconds: Double
    package var latencies: Latencies
    package var cpuSeconds: Double
    /// Extra numeric fields for one scenario (token requests seen, RSS growth, …).
    package var extra: [(String, Double)] = []

    package init(
        scenario: String, implementation: String = "swift-oauth2", requests: Int, concurrency: Int, errors: Int = 0,
        seconds: Double, latencies: Latencies, cpuSeconds: Double, extra: [(String, Double)] = []
    ) {
        self.scenario = scenario
        self.implementation = implementation
        self.requests = requests
        self.concurrency = concurrency
        self.errors = errors
        self.seconds = seconds
        self.latencies = latencies
        self.cpuSeconds = cpuSeconds
        self.extra = extra
    }

    package func print() {
        let (p50, p99) = latencies.summary()
        var fields: [(String, String)] = [
            ("scenario", "\"\(scenario)\""),
            ("implementation", "\"\(implementation)\""),
            ("requests", "\(requests)"),
            ("concurrency", "\(concurrency)"),
            ("errors", "\(errors)"),
            ("seconds", Self.format(seconds, 6)),
            ("requests_per_second", Self.format(seconds > 0 ? Double(requests) / seconds : 0, 1)),
            ("p50_us", Self.format(p50, 2)),
            ("p99_us", Self.format(p99, 2)),
            ("cpu_seconds", Self.format(cpuSeconds, 4)),
            ("peak_rss_kib", "\(ProcessMetrics.peakRSSKiB())"),
        ]
        for (name, value) in extra {
            fields.append((name, Self.format(value, 3)))
        }
        Swift.print("{" + fields.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}")
    }

    /// A number with `digits` decimals, without Foundation's formatter.
    package static func format(_ value: Double, _ digits: Int) -> String {
        guard value.isFinite else { return "0" }
        var scale = 1.0
        for _ in 0..<digits { scale *= 10 }
        let scaled = (abs(value) * scale).rounded()
        let whole = Int(scaled / scale)
        let fraction = Int(scaled - Double(whole) * scale)
        let sign = value < 0 && scaled > 0 ? "-" : ""
        guard digits > 0 else { return "\(sign)\(whole)" }
        let fractionText = String(fraction)
        return "\(sign)\(whole)." + String(repeating: "0", count: digits - fractionText.count) + fractionText
    }
}
