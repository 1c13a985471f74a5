#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension Duration {
    /// The duration in seconds, as a `TimeInterval`. `package`: the testing
    /// product's clock converts the same way.
    package var timeInterval: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }

    /// `"30 s"`, `"0.25 s"`: for messages.
    var secondsDescription: String {
        let seconds = timeInterval
        if seconds == seconds.rounded() { return "\(Int(seconds)) s" }
        return "\((seconds * 1000).rounded() / 1000) s"
    }

    /// The whole duration in nanoseconds, saturating (swift-metrics' timers take nanoseconds).
    var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (product, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        guard !overflow else { return seconds < 0 ? .min : .max }
        return product.addingReportingOverflow(attoseconds / 1_000_000_000).partialValue
    }
}
