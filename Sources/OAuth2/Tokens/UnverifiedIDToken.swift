#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// An ID token that came with a refreshed token and has not been verified:
/// kept with the token (``AccessToken/unverifiedIDToken``) so that the
/// refresh token the provider rotated in the same response is never dropped
/// because of it.
///
/// Two cases, told by ``isRefused``:
/// - **Deferred**: it could not be verified at that moment: the key set
///   could not be fetched, it does not have the token's key yet (a rotation
///   not yet published), or the provider's clock is off. Its claims were
///   checked without the signature and name the same issuer, subject,
///   audience and authorized party as the sign-in's, so the new access and
///   refresh tokens are used; ``AccessToken/idToken`` keeps the verified
///   claims of the earlier ID token, and the client verifies this one again
///   later (``OAuth2Client/idToken()``, the next refresh).
/// - **Refused**: it names another issuer, subject, audience or authorized
///   party, or its signature or form is wrong: a security signal. The new
///   tokens are stored so that a logout can revoke them at the provider,
///   and never used: every request of the account fails with ``reason``
///   until the user signs in again or logs out.
public struct UnverifiedIDToken: Sendable, Hashable, Codable {
    /// The signed ID token as the provider sent it; a credential, never shown.
    public let rawValue: Secret
    /// Why it is not verified: the verification's error code
    /// (`unknown_signing_key`, `timeout`, `subject_mismatch`, …).
    public var reason: OAuth2Error.Code { OAuth2Error.Code(rawValue: reasonCode) }
    /// Whether it was refused, a security signal; `false` while its verification is only deferred.
    public let isRefused: Bool
    /// When the token response brought it: the time its `exp`, `iat` and `nbf`
    /// are checked against when it is verified later.
    public let receivedAt: Date
    /// ``reason``'s wire form (the error code is not `Codable` itself).
    private let reasonCode: String

    /// Creates the record of an ID token that was not verified.
    public init(rawValue: Secret, reason: OAuth2Error.Code, isRefused: Bool, receivedAt: Date) {
        self.rawValue = rawValue
        self.reasonCode = reason.rawValue
        self.isRefused = isRefused
        self.receivedAt = receivedAt
    }

    /// The error every use of a token held with a refused ID token fails with.
    var refusal: OAuth2Error {
        OAuth2Error(
            code: reason,
            message:
                "the ID token of the account's last refresh was refused (\(reason)): the provider's new tokens are kept only to be revoked at logout, never used; sign in again"
        )
    }
}

extension UnverifiedIDToken: CustomStringConvertible, CustomReflectable {
    /// Whether it is refused or deferred, and why; never the token.
    public var description: String { "UnverifiedIDToken(\(isRefused ? "refused" : "deferred"), \(reason))" }

    /// What `dump` and debuggers show: ``description``'s facts, never the token.
    public var customMirror: Mirror {
        Mirror(self, children: ["reason": reasonCode, "isRefused": isRefused, "receivedAt": receivedAt], displayStyle: .struct)
    }
}
