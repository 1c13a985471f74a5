#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A string that must never be shown: a token, a refresh token, a client
/// secret, a password, an authorization code or a PKCE verifier.
///
/// Its `description` and `debugDescription` are redacted (`"abc…(redacted)"`
/// for long values, `"(redacted)"` for short ones), so interpolating it into a
/// log line or an error shows nothing usable. Read ``value`` only where the
/// secret is sent.
public struct Secret: Sendable, Hashable, Codable {
    /// The secret itself. Never log it.
    public let value: String

    /// Wraps a secret value.
    public init(_ value: String) {
        self.value = value
    }

    public init(from decoder: any Decoder) throws {
        value = try decoder.singleValueContainer().decode(String.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(value)
    }

    /// Whether the secret is empty.
    public var isEmpty: Bool { value.isEmpty }

    /// Compares in time that depends only on the lengths, not on where the values differ.
    public func constantTimeEquals(_ other: Secret) -> Bool {
        Self.constantTimeEquals(value, other.value)
    }

    /// Compares two strings in time independent of where they differ.
    static func constantTimeEquals(_ lhs: String, _ rhs: String) -> Bool {
        let left = Array(lhs.utf8)
        let right = Array(rhs.utf8)
        var difference = UInt8(truncatingIfNeeded: left.count ^ right.count)
        difference |= left.count == right.count ? 0 : 1
        let count = min(left.count, right.count)
        for index in 0..<count {
            difference |= left[index] ^ right[index]
        }
        return difference == 0
    }

    /// The redacted form: the first three characters of a long secret, never more.
    public var redacted: String {
        value.count >= 16 ? "\(value.prefix(3))…(redacted)" : "(redacted)"
    }
}

extension Secret: CustomStringConvertible, CustomDebugStringConvertible {
    public var description: String { redacted }
    public var debugDescription: String { "Secret(\(redacted))" }
}
