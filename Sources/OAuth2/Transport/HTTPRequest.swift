#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// An HTTP request as the transport sends it.
///
/// Its `description` shows the method, the URL without its query, and header
/// names only: a request may carry a bearer token, a client secret or a code.
public struct HTTPRequest: Sendable {
    /// The method, such as `GET` or `POST`, in upper case.
    public var method: String
    /// The absolute `http` or `https` URL; the transport refuses any other scheme.
    public var url: URL
    /// The header fields, in order.
    public var headers: HTTPHeaders
    /// The body, or `nil` for none.
    public var body: Data?
    /// The longest the whole exchange may take, or `nil` for the transport's default.
    public var timeout: Duration?
    /// What happens to a redirect: by default (``RedirectPolicy/automatic``)
    /// a signed request (``SigningTransport``, ``OAuth2Client/send(_:)``)
    /// follows it and a plain transport returns it.
    ///
    /// Token requests never follow anything: a token request that followed a
    /// 307 would replay the client secret to another host.
    public var redirects: RedirectPolicy
    /// The largest response body accepted, or `nil` for the transport's default.
    public var maxResponseSize: Int?

    /// Creates a request.
    public init(
        method: String = "GET",
        url: URL,
        headers: HTTPHeaders = [:],
        body: Data? = nil,
        timeout: Duration? = nil,
        redirects: RedirectPolicy = .automatic,
        maxResponseSize: Int? = nil
    ) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.timeout = timeout
        self.redirects = redirects
        self.maxResponseSize = maxResponseSize
    }

    /// Creates a request that follows redirects or returns them.
    @available(*, deprecated, message: "use redirects: .follow or .never; signed requests follow by default")
    public init(
        method: String = "GET",
        url: URL,
        headers: HTTPHeaders = [:],
        body: Data? = nil,
        timeout: Duration? = nil,
        followRedirects: Bool,
        maxResponseSize: Int? = nil
    ) {
        self.init(
            method: method, url: url, headers: headers, body: body, timeout: timeout,
            redirects: followRedirects ? .follow : .never, maxResponseSize: maxResponseSize
        )
    }

    /// Whether redirects are followed: ``redirects`` is ``RedirectPolicy/follow``.
    @available(*, deprecated, renamed: "redirects")
    public var followRedirects: Bool {
        get { redirects == .follow }
        set { redirects = newValue ? .follow : .never }
    }
}

/// What a sender does with a redirect (a 301, 302, 303, 307 or 308 with a `Location`).
public enum RedirectPolicy: Sendable, Hashable {
    /// The sender's default. ``SigningTransport`` and ``OAuth2Client/send(_:)``
    /// follow, at most ``SigningTransport/maxRedirects`` times, with the token
    /// going along only to the request's own origin and never from `https`
    /// to `http` (`insecure_redirect`); ``CurlTransport`` returns the 3xx.
    case automatic
    /// Follow: `http` and `https` only, at most 10 redirects.
    case follow
    /// Return the 3xx as the response.
    case never
}

extension HTTPRequest: CustomStringConvertible {
    public var description: String {
        "\(method) \(url.redactingQuery) \(headers)"
    }
}

extension HTTPRequest {
    /// A GET of a provider's JSON document (metadata, a key set): never
    /// follows a redirect, since a document served from elsewhere is not the provider's.
    static func providerDocument(_ url: URL, accept: String = "application/json", timeout: Duration?, maxResponseSize: Int) -> HTTPRequest {
        HTTPRequest(
            method: "GET",
            url: url,
            headers: ["Accept": accept],
            timeout: timeout,
            redirects: .never,
            maxResponseSize: maxResponseSize
        )
    }
}
