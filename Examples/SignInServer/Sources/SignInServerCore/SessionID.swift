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
}
