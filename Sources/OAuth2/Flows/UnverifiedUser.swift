#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What a provider says about the user outside any signed token: Sign in
/// with Apple's first-sign-in `user` (`{"name":{"firstName":…,"lastName":…},"email":…}`,
/// "Incorporating Sign in with Apple into other platforms").
///
/// Untrusted text: read leniently (a member that is missing, of another type,
/// empty or too long is `nil`; control characters are removed), never proof
/// of anything. Show it, prefill a profile with it; identify the user by the
/// verified ID token only. Its `description` says which parts are present,
/// not what they are (they are personal data).
public struct UnverifiedUser: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The longest `user` value read, in bytes; a longer one is ignored.
    public static let maxJSONSize = 4096
    /// The longest part kept, in characters; a longer one is `nil`.
    public static let maxPartLength = 256

    /// `name.firstName`, when given.
    public let firstName: String?
    /// `name.lastName`, when given.
    public let lastName: String?
    /// `email`, when given: the address as the provider posted it, not verified
    /// here (the ID token's `email` and `email_verified` are the signed ones).
    public let email: String?

    /// Creates a value; each part is cleaned as a parsed one would be.
    public init(firstName: String?, lastName: String?, email: String?) {
        self.firstName = Self.clean(firstName)
        self.lastName = Self.clean(lastName)
        self.email = Self.clean(email)
    }

    /// Reads the `user` JSON; `nil` when it is too long, not a JSON object, or
    /// has no part worth keeping.
    public init?(json: String) {
        guard json.utf8.count <= Self.maxJSONSize,
            case .object(let members)? = try? JSONParser.parse(Data(json.utf8), maxDepth: 4)
        else { return nil }
        var name: [String: JSONValue] = [:]
        if case .object(let parts)? = members["name"] { name = parts }
        self.init(firstName: name["firstName"]?.stringValue, lastName: name["lastName"]?.stringValue, email: members["email"]?.stringValue)
        if firstName == nil && lastName == nil && email == nil { return nil }
    }

    /// The text without control characters or surrounding whitespace; `nil`
    /// when empty or longer than ``maxPartLength``.
    private static func clean(_ text: String?) -> String? {
        guard let text else { return nil }
        let kept = String(String.UnicodeScalarView(text.unicodeScalars.filter { !RedirectValidator.isControl($0) }))
            .trimmingSurroundingWhitespace
        guard !kept.isEmpty, kept.count <= maxPartLength else { return nil }
        return String(kept)
    }

    /// Which parts are present; never their values.
    public var description: String {
        let present = [("firstName", firstName), ("lastName", lastName), ("email", email)].compactMap { $0.1 == nil ? nil : $0.0 }
        return "UnverifiedUser(\(present.joined(separator: ", ")))"
    }
}
