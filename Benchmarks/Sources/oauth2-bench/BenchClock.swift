#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Synchronization
import OAuth2

/// The system clock plus an offset the refresh storm moves forward, so the
/// token the server handed out (valid for an hour) is expired when the storm starts.
final class BenchClock: OAuth2Clock {
    private let offset = Mutex<Double>(0)

    func now() -> Date {
        Date().addingTimeInterval(offset.withLock { $0 })
    }

    func advance(bySeconds seconds: Double) {
        offset.withLock { $0 += seconds }
    }
}
