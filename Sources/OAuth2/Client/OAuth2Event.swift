#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What happened to a client's token: the delegate's calls, as values for
/// ``OAuth2Client/events``.
public enum OAuth2Event: Sendable, Hashable {
    /// The client has no usable token: start a flow.
    case needsAuthentication
    /// A flow or grant produced a token (already stored).
    case gotAccessToken(AccessToken)
    /// A refresh produced a new token (already stored).
    case refreshedAccessToken(AccessToken)
    /// The token is gone and was deleted; `nil` for a logout.
    case lostAccessToken(OAuth2Error?)
    /// An attempt to get or refresh a token failed; a held token is kept.
    case failedToGetAccessToken(OAuth2Error)
    /// The provider issued a token that the store could not save. The client
    /// keeps it in memory, uses it, and saves it again on the next occasion;
    /// a process that exits before then loses it (and perhaps the grant).
    case failedToStoreAccessToken(OAuth2Error)
    /// A refresh's ID token could not be verified at that moment (the key set
    /// is down or lacks its key, the clocks disagree). The new token is used;
    /// the sign-in's verified claims stay, and the ID token is verified again
    /// later (``OAuth2Client/idToken()``, the next refresh). See ``UnverifiedIDToken``.
    case deferredIDTokenVerification(OAuth2Error)
}

extension OAuth2StateMachine.Notification {
    var event: OAuth2Event {
        switch self {
        case .needsAuthentication: return .needsAuthentication
        case .gotAccessToken(let token): return .gotAccessToken(token)
        case .refreshed(let token): return .refreshedAccessToken(token)
        case .lost(let error): return .lostAccessToken(error)
        case .failed(let error): return .failedToGetAccessToken(error)
        case .storeFailed(let error): return .failedToStoreAccessToken(error)
        case .idTokenDeferred(let error): return .deferredIDTokenVerification(error)
        }
    }
}
