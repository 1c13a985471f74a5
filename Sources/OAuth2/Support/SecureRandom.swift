#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Random bytes from the system's CSPRNG, for `state` values and PKCE verifiers.
enum SecureRandom {
    /// `count` bytes from `SystemRandomNumberGenerator` (getrandom(2) on Linux).
    static func bytes(_ count: Int) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        var bytes: [UInt8] = []
        bytes.reserveCapacity(count + 7)
        while bytes.count < count {
            let word = generator.next() as UInt64
            withUnsafeBytes(of: word) { bytes.append(contentsOf: $0) }
        }
        return Array(bytes.prefix(count))
    }
}
