/// The token store's account keys: one per provider user.
///
/// A token is stored under the user it belongs to (`user:<name>`, the name
/// the provider's API gives), so a user has one token whatever the number of
/// browsers, and the store holds at most one file per user. The name is only
/// known once a token exists: the callback exchanges the code for a token
/// that belongs to no account, asks the API whose it is, then adopts it
/// (``OAuth2Client/adopt(_:)``). With a real provider, key on its stable user
/// id (OIDC `sub`, GitHub's numeric id), not on a renameable login.
enum AccountKey {
    /// The account of a provider user.
    static func user(_ name: String) -> String {
        "user:\(name)"
    }
}
