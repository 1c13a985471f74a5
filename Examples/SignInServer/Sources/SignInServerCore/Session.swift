import Foundation
import OAuth2

/// One visitor's server-side state, found by the random id in its cookie.
///
/// The browser holds only the id; the pending sign-in (state, PKCE verifier,
/// redirect URI) and the account stay here, never in a URL or a cookie.
public struct Session: Sendable {
    /// The sign-in in progress, which the callback must match; `nil` when none.
    public var pending: PendingAuthorization?
    /// When the pending sign-in started; it expires after the store's pending lifetime.
    public var pendingSince: Date?
    /// The account key of the signed-in user (``AccountKey``); `nil` until a sign-in completes.
    public var account: String?
    /// When the session was last used; an idle session expires after the store's idle lifetime.
    public var lastSeen: Date

    /// Creates an empty session.
    public init(lastSeen: Date) {
        self.lastSeen = lastSeen
    }
}
