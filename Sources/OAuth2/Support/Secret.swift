#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A string that must never be shown: a token, a refresh token, a client
/// secret, a password, an authorization code or a PKCE verifier.
///
/// Its `description` and `debugDescription` are redacted (`"abc…(redacted)"`
/// for long values, `"(redacted)"` for short ones; ``opaque(_:)`` secrets
/// never show a prefix), so interpolating it into a log line or an error
/// shows nothing usable; `dump` and `Mirror` show only that redacted form.
/// Read ``value`` only where the secret is sent. Two secrets are equal when
/// their values are.
public struct Secret: Sendable, Hashable, Codable {
    /// The secret itself. Never log it.
    public let value: String
    /// Whether the redacted form may show the first characters (tokens: it
    /// helps tell them apart in a log); never for passwords and client secrets.
    private let showsPrefix: Bool

    /// Wraps a secret value, such as a token.
    public init(_ value: String) {
        self.value = value
        self.showsPrefix = true
    }

    /// A secret whose redacted form shows nothing of it: for passwords and
    /// client secrets, where even three characters help a guess.
    public static func opaque(_ value: String) -> Secret {
        Secret(value: value, showsPrefix: false)
    }

    private init(value: String, showsPrefix: Bool) {
        self.value = value
        self.showsPrefix = showsPrefix
    }

    public static func == (lhs: Secret, rhs: Secret) -> Bool {
        lhs.value == rhs.value
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(value)
    }

    /// The same secret, never showing a prefix.
    var opaque: Secret {
        .opaque(value)
    }

    public init(from decoder: any Decoder) throws {
        value = try decoder.singleValueContainer().decode(String.self)
        showsPrefix = true
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

    /// The redacted form: the first three characters of a long token, never
    /// more; nothing of an opaque secret.
    public var redacted: String {
        showsPrefix && value.count >= 16 ? "\(value.prefix(3))…(redacted)" : "(redacted)"
    }
}

extension Secret: CustomReflectable {
    /// No children: `dump` and debuggers show the redacted description only.
    public var customMirror: Mirror {
        Mirror(self, children: [], displayStyle: .struct)
    }
}

extension Secret: CustomStringConvertible, CustomDebugStringConvertible {
    public var description: String { redacted }
    public var debugDescription: String { "Secret(\(redacted))" }
}
