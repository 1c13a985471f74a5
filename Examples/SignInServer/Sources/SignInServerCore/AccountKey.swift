import Crypto
import Foundation

/// The token store's account keys: one per provider user.
///
/// A token is stored under the user it belongs to, so a user has one token
/// whatever the number of browsers, and the store holds at most one file per
/// user. Who the user is is only known once a token exists: the callback
/// exchanges the code for a token that belongs to no account, learns whose
/// it is, then adopts it (``OAuth2Client/adopt(_:)``).
///
/// With an OpenID provider the token's verified ID token says whose it is:
/// the key is ``subject(issuer:subject:)``, from `iss` and `sub`, the pair
/// OpenID Connect promises never to reassign. Without one, the provider's API
/// names the user and the key is ``user(_:)``; with a real provider, key that
/// on its stable user id (GitHub's numeric id), not on a renameable login.
enum AccountKey {
    /// The account of a user the provider's API names.
    static func user(_ name: String) -> String {
        "user:\(name)"
    }

    /// The account of an OpenID Connect user: `oidc:<issuer>:<sub>`, where
    /// `<issuer>` is the base64url SHA-256 of `iss` (43 characters).
    ///
    /// `sub` is unique only within its issuer, so the issuer is part of the
    /// key; its hash has a fixed length and no `:`, so two different pairs
    /// never give one key, whatever characters `sub` holds (up to 255 ASCII
    /// characters by OpenID Connect Core §2), and no `user:` key is ever an
    /// `oidc:` one. The token store encodes every key into a file name of its
    /// own (`FileTokenStore.fileName(for:)`): `/`, `.` and the like in `sub`
    /// never reach the file system as themselves.
    static func subject(issuer: String, subject: String) -> String {
        "\(subjectPrefix)\(issuerDigest(issuer)):\(subject)"
    }

    /// Whether an account is an OpenID Connect user's (``subject(issuer:subject:)``).
    static func isSubject(_ account: String) -> Bool {
        account.hasPrefix(subjectPrefix)
    }

    /// Whether the account is a user that `issuer`'s ID token named.
    static func isSubject(_ account: String, of issuer: String) -> Bool {
        account.hasPrefix("\(subjectPrefix)\(issuerDigest(issuer)):")
    }

    private static let subjectPrefix = "oidc:"

    /// The base64url (unpadded) SHA-256 of the issuer's UTF-8 bytes.
    private static func issuerDigest(_ issuer: String) -> String {
        Data(SHA256.hash(data: Data(issuer.utf8))).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}
