/// Per-request latencies of one caller, in nanoseconds, stored without
/// allocating while the benchmark runs.
package struct Latencies: Sendable {
    package private(set) var samples: [UInt64]

    package init(capacity: Int) {
        samples = []
        samples.reserveCapacity(capacity)
    }

    @inline(__always)
    package mutating func record(_ nanoseconds: UInt64) {
        samples.append(nanoseconds)
    }

    package mutating func merge(_ other: Latencies) {
        samples.append(contentsOf: other.samples)
    }

    /// The p-th quantile (0...1) in microseconds, nearest rank; 0 without samples.
    package func percentileMicroseconds(_ p: Double, sorted: [UInt64]) -> Double {
        guard !sorted.isEmpty else { return 0 }
        let index = Int((p * Double(sorted.count - 1)).rounded())
        return Double(sorted[index]) / 1000
    }

    /// p50 and p99 in microseconds.
    package func summary() -> (p50: Double, p99: Double) {
        let sorted = samples.sorted()
        return (percentileMicroseconds(0.50, sorted: sorted), percentileMicroseconds(0.99, sorted: sorted))
    }
}
