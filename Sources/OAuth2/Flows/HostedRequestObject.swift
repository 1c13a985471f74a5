#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// A signed request object passed by reference (RFC 9101 §5.2, OpenID
/// Connect Core §6.2): the app serves ``jwt`` at ``url``, and the provider
/// fetches it from there when the browser arrives with `request_uri`.
///
/// ``OAuth2Provider/authorizationURL(redirectURI:scopes:additionalParameters:hostingRequestObjectUnder:)``
/// makes it beside the pending authorization. Serve it with a `GET` route
/// under the base URL you gave, looked up by ``id`` (the URL's last path
/// segment), with the `Content-Type` ``contentType``, until ``expiresAt``,
/// then forget it: the provider fetches it when the user arrives, and an
/// expired object is refused by the provider anyway (its `exp`). Keep it
/// where every instance that may answer the provider's fetch can read it
/// (it is `Codable`).
///
/// The object is signed, not encrypted: anyone who has the URL can read the
/// authorization parameters (a `login_hint`, say). The URL is therefore
/// unguessable (256 random bits) and different for every authorization:
/// OpenID Connect Core §6.2 asks a `request_uri` for entropy appropriate to
/// its lifetime. Its `description` shows neither the object nor that random part.
public struct HostedRequestObject: Sendable, Codable, Hashable, Identifiable, CustomStringConvertible {
    /// The media type request objects are served with, the one RFC 9101
    /// registers for them: `application/oauth-authz-req+jwt`.
    public static let mediaType = "application/oauth-authz-req+jwt"
    /// The longest URL made: OpenID Connect Core §6.2 caps a `request_uri` at 512 ASCII characters.
    static let maxURLLength = 512

    /// The URL's last path segment: 32 random bytes, base64url (43 characters).
    /// A route under the base URL finds the object by it.
    public let id: String
    /// Where the app serves the object: the base URL given, then ``id``. It is
    /// the `request_uri` the authorization URL carries.
    public let url: URL
    /// The signed request object (a compact JWS, `typ` `oauth-authz-req+jwt`),
    /// the body to serve.
    public let jwt: String
    /// The object's `exp`: serve it until then, not after.
    public let expiresAt: Date

    /// The `Content-Type` to serve ``jwt`` with: ``mediaType``.
    public var contentType: String { Self.mediaType }

    init(id: String, url: URL, jwt: String, expiresAt: Date) {
        self.id = id
        self.url = url
        self.jwt = jwt
        self.expiresAt = expiresAt
    }

    /// The base URL and the expiry; neither the object nor the URL's random part.
    public var description: String {
        let base = url.absoluteString.dropLast(id.utf8.count)
        return "HostedRequestObject(\(base)…, expires at \(Int(expiresAt.timeIntervalSince1970)))"
    }

    /// A fresh ``id``: 256 bits from the system's CSPRNG.
    static func makeID() -> String {
        Base64URL.encode(SecureRandom.bytes(32))
    }

    /// The URL of the object `id` under `base`: `base`, a `/` unless it ends
    /// with one, then `id`.
    ///
    /// - Throws: `invalid_configuration` when `base` is not an absolute
    ///   `http(s)` URL with a host, has userinfo, a query or a fragment, or the
    ///   URL would be longer than 512 characters (OpenID Connect Core §6.2);
    ///   `insecure_endpoint` when it is `http` to a host that is not loopback,
    ///   the rule of every endpoint here: over plain http anyone on the way
    ///   reads the object, and could swap an unsigned one.
    static func url(under base: URL, id: String) throws(OAuth2Error) -> URL {
        let text = base.absoluteString
        guard let parts = URLParts(text[...]), parts.isHTTP, let host = parts.host, !host.isEmpty else {
            throw invalidBase("is not an absolute http(s) URL with a host")
        }
        guard parts.userinfo == nil, parts.query == nil, parts.fragment == nil else {
            throw invalidBase("has userinfo, a query or a fragment; the request object's URL is the base and a path segment")
        }
        try EndpointPolicy.requireSecure(base, role: "request object's base URL")
        let made = text + (text.hasSuffix("/") ? "" : "/") + id
        guard made.utf8.count <= maxURLLength, let url = URL(string: made) else {
            throw invalidBase("makes a request_uri longer than \(maxURLLength) characters (OpenID Connect Core §6.2)")
        }
        return url
    }

    private static func invalidBase(_ problem: String) -> OAuth2Error {
        OAuth2Error(code: .invalidConfiguration, message: "the request object's base URL \(problem)")
    }
}

extension HostedRequestObject: CustomReflectable {
    /// What `dump` and debuggers show: the expiry only, neither the object nor its URL.
    public var customMirror: Mirror {
        Mirror(self, children: ["expiresAt": expiresAt], displayStyle: .struct)
    }
}
