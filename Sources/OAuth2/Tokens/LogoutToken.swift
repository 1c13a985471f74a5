#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// The claims of an OpenID Connect back-channel logout token that the client
/// verified (OpenID Connect Back-Channel Logout 1.0 §2.4): the provider says
/// that the user's session ``sessionID`` (or every session of ``subject``)
/// at ``issuer`` has ended, and the app ends its own sessions for it.
///
/// Made only by ``OAuth2Provider/verifyLogoutToken(_:)``, from a token
/// whose signature, issuer, audience, times, event, `jti` and absence of
/// `nonce` it checked. Its `description` names the issuer and subject;
/// never the session id or the token itself.
public struct LogoutToken: Sendable, Hashable {
    /// The event member a logout token's `events` must have (§2.4).
    public static let backChannelLogoutEvent = "http://schemas.openid.net/event/backchannel-logout"

    /// `iss`: the provider, as its configuration's ``IssuerRule`` accepts it.
    public let issuer: String
    /// `sub`: the user whose sessions ended, when the provider said; with no
    /// ``sessionID``, every session of that user at ``issuer`` ended.
    public let subject: String?
    /// `sid`: the provider's session that ended, when the provider said: the
    /// `sid` of the ID token that session's sign-in got (``IDToken/sessionID``).
    public let sessionID: String?
    /// `aud`: the clients the token is for; this client's id is among them.
    public let audience: [String]
    /// `iat`: when the provider issued it.
    public let issuedAt: Date
    /// `exp`: after this (and the clock leeway), the token is refused.
    public let expiresAt: Date
    /// `jti`: the token's unique id, which the client accepts once.
    public let tokenID: String
    /// `events`: the event members, `http://schemas.openid.net/event/backchannel-logout` among them.
    public let events: [String: JSONValue]
    /// Every claim of the token, as the provider sent it.
    public let claims: [String: JSONValue]

    /// Reads a verified token's claims, checking what §2.4 requires of them.
    ///
    /// - Throws: ``OAuth2Error`` `invalid_logout_token` when `iss`, `aud`,
    ///   `iat`, `exp` or `jti` is missing or of the wrong type, `events` is
    ///   not an object with the back-channel logout member (an object), `sub`
    ///   and `sid` are both missing (or either is not a string), or a `nonce`
    ///   is present (§2.4 prohibits it, so that an ID token is never taken for
    ///   a logout token). No message names a claim's value.
    package init(claims: [String: JSONValue]) throws(OAuth2Error) {
        func invalid(_ problem: String) -> OAuth2Error {
            OAuth2Error(code: .invalidLogoutToken, message: "the logout token \(problem)")
        }
        func string(_ name: String) throws(OAuth2Error) -> String {
            guard let value = claims[name]?.stringValue, !value.isEmpty else { throw invalid("has no \(name) string") }
            return value
        }
        func optionalString(_ name: String) throws(OAuth2Error) -> String? {
            switch claims[name] {
            case nil, .null?: return nil
            case .string(let value)? where !value.isEmpty: return value
            default: throw invalid("has a \(name) that is not a string")
            }
        }
        func date(_ name: String) throws(OAuth2Error) -> Date {
            guard case .number(let seconds)? = claims[name], seconds.isFinite, seconds >= 0, seconds < 253_402_300_800 else {
                throw invalid("has no \(name) time in seconds")
            }
            return Date(timeIntervalSince1970: seconds)
        }
        issuer = try string("iss")
        audience = try IDToken.audience(in: claims, invalid: invalid)
        issuedAt = try date("iat")
        expiresAt = try date("exp")
        tokenID = try string("jti")
        guard case .object(let events)? = claims["events"] else { throw invalid("has no events object") }
        guard case .object? = events[Self.backChannelLogoutEvent] else {
            throw invalid("has no events member \(Self.backChannelLogoutEvent) that is an object")
        }
        self.events = events
        subject = try optionalString("sub")
        sessionID = try optionalString("sid")
        guard subject != nil || sessionID != nil else { throw invalid("has neither sub nor sid") }
        guard claims["nonce"] == nil else { throw invalid("has a nonce, which a logout token must not have") }
        self.claims = claims
    }

    /// Whether this logout ends the session an ID token began: the same
    /// issuer, and the same `sid` when the logout names one, else the same
    /// `sub` (§2.4: with only `sub`, every session of that user ended).
    ///
    /// An app that keeps each session's ``IDToken`` (``AccessToken/idToken``)
    /// finds with this the sessions to end.
    public func ends(_ idToken: IDToken) -> Bool {
        guard idToken.issuer == issuer else { return false }
        if let sessionID {
            return idToken.sessionID == sessionID && (subject == nil || idToken.subject == subject)
        }
        return idToken.subject == subject
    }
}

extension LogoutToken: CustomStringConvertible {
    /// The issuer and subject, and whether a session id came; never its value or the token.
    public var description: String {
        "LogoutToken(iss \(issuer), sub \(subject ?? "none"), sid \(sessionID == nil ? "none" : "present"))"
    }
}

extension LogoutToken: CustomReflectable {
    /// What `dump` and debuggers show: the issuer, subject and times, not the session id or other claims.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: ["issuer": issuer, "subject": subject as Any, "issuedAt": issuedAt, "expiresAt": expiresAt],
            displayStyle: .struct)
    }
}

extension IDToken {
    /// `sid`: the provider's session this sign-in belongs to, when the
    /// provider said (OpenID Connect Front- and Back-Channel Logout); a
    /// logout token names it (``LogoutToken/sessionID``) when that session ends.
    public var sessionID: String? { claims["sid"]?.stringValue }
}
