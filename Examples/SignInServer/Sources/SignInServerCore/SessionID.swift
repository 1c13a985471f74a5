import Crypto
import Foundation

/// Session ids: 256 bits from the system's CSPRNG, base64url without padding.
///
/// `SystemRandomNumberGenerator` is cryptographically secure on every
/// platform Swift supports (`getrandom` on Linux). 43 characters, all valid
/// in a cookie value.
enum SessionID {
    /// A fresh, unguessable id.
    static func make() -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        return Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// The SHA-256 of a session id or a `state`: what a shared store keeps
    /// and compares in their place, so that its rows hold no usable id and
    /// a comparison's timing tells nothing about the secret.
    static func digest(_ secret: String) -> Data {
        Data(SHA256.hash(data: Data(secret.utf8)))
    }
}
