#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Hears what happens to a client's token, in NXOAuth2Client's shape.
///
/// Methods are called on the task that caused the event, after the client
/// has released its lock, so a delegate may call back into the client: the
/// documented pattern is that ``oauth2ClientNeedsAuthentication(_:)`` starts
/// a flow (in a `Task`: `client.authorizationURL(...)` is async, since a
/// pushed request goes to the provider first). Keep the methods short; start a
/// `Task` for slow work. Every method but the first has a default that does
/// nothing. Tokens passed here redact themselves in `description`.
public protocol OAuth2ClientDelegate: AnyObject, Sendable {
    /// The client has no usable token: start a flow.
    func oauth2ClientNeedsAuthentication(_ client: OAuth2Client)
    /// A flow or grant produced a token (already stored).
    func oauth2Client(_ client: OAuth2Client, didGetAccessToken token: AccessToken)
    /// A refresh produced a new token (already stored).
    func oauth2Client(_ client: OAuth2Client, didRefreshAccessToken token: AccessToken)
    /// The token is gone: the grant was revoked or expired (`invalid_grant`),
    /// the resource server rejected a fresh token, or the user logged out (`error` is `nil`).
    /// The stored token was deleted.
    func oauth2Client(_ client: OAuth2Client, didLoseAccessTokenWithError error: OAuth2Error?)
    /// An attempt to get or refresh a token failed; a token that was held is kept.
    func oauth2Client(_ client: OAuth2Client, didFailToGetAccessTokenWithError error: OAuth2Error)
    /// The provider issued a token that the store could not save (a full
    /// disk, a database timeout). The client keeps it in memory, uses it and
    /// saves it again on the next occasion; a process that exits before then
    /// loses it, and with a rotating refresh token perhaps the grant.
    func oauth2Client(_ client: OAuth2Client, didFailToStoreAccessTokenWithError error: OAuth2Error)
    /// A refresh's ID token could not be verified at that moment (the key set
    /// is down or lacks its key, the clocks disagree): the new token is used,
    /// the sign-in's verified claims stay, and the ID token is verified again
    /// later. A refused one is reported as a failure instead, and the account's
    /// token is then held, never used (``UnverifiedIDToken``).
    func oauth2Client(_ client: OAuth2Client, didDeferIDTokenVerificationWithError error: OAuth2Error)
}

extension OAuth2ClientDelegate {
    public func oauth2Client(_ client: OAuth2Client, didGetAccessToken token: AccessToken) {}
    public func oauth2Client(_ client: OAuth2Client, didRefreshAccessToken token: AccessToken) {}
    public func oauth2Client(_ client: OAuth2Client, didLoseAccessTokenWithError error: OAuth2Error?) {}
    public func oauth2Client(_ client: OAuth2Client, didFailToGetAccessTokenWithError error: OAuth2Error) {}
    public func oauth2Client(_ client: OAuth2Client, didFailToStoreAccessTokenWithError error: OAuth2Error) {}
    public func oauth2Client(_ client: OAuth2Client, didDeferIDTokenVerificationWithError error: OAuth2Error) {}
}
