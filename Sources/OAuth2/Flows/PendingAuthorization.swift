#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// An authorization request that was started and not yet finished: the URL
/// to send the user to, and what the redirect must match.
///
/// Codable, so a server can keep it in the user's session and finish the flow
/// on another instance. It holds the PKCE verifier: keep it server-side (an
/// encrypted or server-stored session), never in a cookie the browser can read.
/// With DPoP it holds the grant's private key too, for the same reason.
/// Its `description` shows neither the verifier, nor the state, nor the nonce,
/// nor the key.
public struct PendingAuthorization: Sendable, Codable, Hashable, CustomStringConvertible {
    /// The authorize URL to send the user to.
    public let url: URL
    /// The `state` sent; the redirect must carry it back.
    public let state: String
    /// The PKCE verifier, sent with the code in the token request.
    public let codeVerifier: Secret
    /// The redirect URI exactly as sent as `redirect_uri`.
    public let redirectURI: URL
    /// The scopes requested.
    public let scopes: [String]
    /// The issuer a redirect's `iss` must equal (RFC 9207), when known.
    public let expectedIssuer: String?
    /// Whether a redirect without `iss` is refused.
    public let requiresIssuer: Bool
    /// When the request was made.
    public let createdAt: Date
    /// The OpenID Connect `nonce` sent, which the ID token must carry back;
    /// `nil` when the request did not ask for an ID token.
    public let nonce: Secret?
    /// When the pushed request behind ``url`` expires (RFC 9126 §2.2
    /// `expires_in`); `nil` when the request was not pushed.
    ///
    /// After it the provider refuses the URL, and a redirect that still comes
    /// back is handled as any other (the provider's error is reported). The
    /// library never pushes again on its own, since a new push means a new
    /// `state` and verifier for the app's session to hold: an app that shows
    /// the URL later checks ``isPushedRequestExpired(at:)`` and starts a new
    /// authorization; `LoopbackReceiver` refuses to wait for an expired one
    /// (`pushed_request_expired`).
    public let pushedRequestExpiresAt: Date?
    /// The key the grant's tokens will be bound to (RFC 9449), made when the
    /// authorization started: the request named its thumbprint (`dpop_jkt`),
    /// so the code can be exchanged only with proofs of this key. `nil`
    /// without ``OAuth2Configuration/dpop``.
    public let dpopKey: DPoPKey?

    package init(
        url: URL,
        state: String,
        codeVerifier: Secret,
        redirectURI: URL,
        scopes: [String],
        expectedIssuer: String?,
        requiresIssuer: Bool,
        createdAt: Date,
        nonce: Secret? = nil,
        pushedRequestExpiresAt: Date? = nil,
        dpopKey: DPoPKey? = nil
    ) {
        self.url = url
        self.state = state
        self.codeVerifier = codeVerifier
        self.redirectURI = redirectURI
        self.scopes = scopes
        self.expectedIssuer = expectedIssuer
        self.requiresIssuer = requiresIssuer
        self.createdAt = createdAt
        self.nonce = nonce
        self.dpopKey = dpopKey
        self.pushedRequestExpiresAt = pushedRequestExpiresAt
    }

    /// Whether the URL's pushed request has expired at `now`: the provider
    /// would refuse it, so send the user to a new authorization instead.
    /// Always `false` for a request that was not pushed.
    public func isPushedRequestExpired(at now: Date) -> Bool {
        pushedRequestExpiresAt.map { now >= $0 } ?? false
    }

    /// The authorize endpoint without the query, the redirect URI and the scopes.
    public var description: String {
        "PendingAuthorization(\(url.redactingQuery), redirect \(redirectURI.redactingQuery), scopes \(scopes.joined(separator: " ")))"
    }
}

extension PendingAuthorization: CustomReflectable {
    /// What `dump` and debuggers show: neither the state, nor the verifier,
    /// nor the nonce, nor the URL that carries them; the DPoP key as its thumbprint.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "redirectURI": redirectURI,
                "scopes": scopes,
                "expectedIssuer": expectedIssuer as Any,
                "requiresIssuer": requiresIssuer,
                "createdAt": createdAt,
                "pushedRequestExpiresAt": pushedRequestExpiresAt as Any,
                "dpopKey": dpopKey as Any,
            ], displayStyle: .struct)
    }
}
