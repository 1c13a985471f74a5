import Foundation

/// The token store's account keys: one per provider user, plus short-lived
/// ones for sign-ins still in flight.
///
/// A token is stored under the user it belongs to (`user:<name>`, the name
/// the provider's API gives), so a user has one token whatever the number of
/// browsers, the store holds at most one file per user, and a server restart
/// (which loses the in-memory sessions) leaves no orphaned tokens behind.
/// The name is only known once a token exists, so the callback first stores
/// the token under a random `sign-in:<id>` key, asks the API who it belongs
/// to, then moves it. The prefixes keep the two kinds from ever colliding,
/// whatever characters a user name holds. With a real provider, key on its
/// stable user id (OIDC `sub`, GitHub's numeric id), not on a renameable login.
enum AccountKey {
    /// The account of a provider user.
    static func user(_ name: String) -> String {
        "user:\(name)"
    }

    /// A fresh account for one sign-in whose user is not known yet.
    static func signIn() -> String {
        "sign-in:\(SessionID.make())"
    }
}
