#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Makes the `state` values that bind a redirect to the request that caused it (RFC 6749 §10.12).
enum StateGenerator {
    /// A fresh state: 32 bytes (256 bits) from the system CSPRNG, base64url without padding (43 characters).
    static func makeState() -> String {
        Base64URL.encode(SecureRandom.bytes(32))
    }
}
