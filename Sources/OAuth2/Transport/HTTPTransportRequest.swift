#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif
public import HTTPTypes

/// An HTTP request as the transport sends it: a method, an absolute URL,
/// swift-http-types' `HTTPFields`, a body, and how the exchange may go
/// (time limit, redirects, response size).
///
/// ``head`` and ``init(_:body:timeout:redirects:maxResponseSize:)`` convert
/// from and to `HTTPTypes.HTTPRequest`, the request head of Hummingbird,
/// swift-openapi-runtime and AsyncHTTPClient's newer API.
///
/// Its `description` shows the method, the URL without its query, and header
/// names only: a request may carry a bearer token, a client secret or a code.
public struct HTTPTransportRequest: Sendable {
    /// The method, such as `.get` or `.post`.
    public var method: HTTPRequest.Method
    /// The absolute `http` or `https` URL; the transport refuses any other scheme.
    public var url: URL
    /// The header fields, in order.
    public var headers: HTTPFields
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
    /// The certificate presented when the server asks for one in the TLS
    /// handshake (mutual TLS, RFC 8705); `nil` (the default) presents none.
    ///
    /// ``CurlTransport`` never reuses a connection, nor resumes a TLS
    /// session, made with another certificate or with none for it, and
    /// none made with it for a request without it. It goes along on the
    /// redirects a transport follows. A transport that cannot present a
    /// client certificate must refuse a request that has one.
    public var clientCertificate: ClientCertificate?
    /// Whether the request may connect only to public addresses: `false`
    /// (the default) connects wherever the host resolves to.
    ///
    /// When `true`, ``CurlTransport`` checks every address it connects to,
    /// after DNS, and refuses a loopback, private, link-local, unique-local,
    /// shared, unspecified, multicast or reserved one (an IPv4 address inside
    /// an IPv6 one included): ``HTTPTransportError/internalAddress``, and
    /// nothing is sent. The check is on the connection, so a name that
    /// resolves to an internal address, or is made to between a check and
    /// the request (DNS rebinding), is caught. Such a request never shares a
    /// connection with another. Through a proxy (`https_proxy`, `all_proxy`
    /// in the environment) the proxy resolves the name, and it is the proxy's
    /// to refuse; the request then goes through the proxy whatever `no_proxy`
    /// says. A transport that cannot check ignores it.
    public var connectsOnlyToPublicAddresses = false

    /// Creates a request.
    public init(
        method: HTTPRequest.Method = .get,
        url: URL,
        headers: HTTPFields = [:],
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

    /// Creates a request from a swift-http-types request head.
    ///
    /// - Throws: ``HTTPTransportError/invalidRequest`` when the head has no
    ///   absolute `http` or `https` URL (scheme, authority and path).
    public init(
        _ head: HTTPRequest,
        body: Data? = nil,
        timeout: Duration? = nil,
        redirects: RedirectPolicy = .automatic,
        maxResponseSize: Int? = nil
    ) throws(HTTPTransportError) {
        guard let url = head.url, let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https", url.host != nil else {
            throw HTTPTransportError.invalidRequest.with(message: "the request head has no absolute http or https URL")
        }
        self.init(
            method: head.method, url: url, headers: head.headerFields, body: body, timeout: timeout, redirects: redirects,
            maxResponseSize: maxResponseSize
        )
    }

    /// The request head as swift-http-types spells it: method, scheme,
    /// authority, path (with the query) and header fields.
    public var head: HTTPRequest {
        HTTPRequest(method: method, url: url, headerFields: headers)
    }
}

/// What a sender does with a redirect (a 301, 302, 303, 307 or 308 with a `Location`).
public enum RedirectPolicy: Sendable, Hashable {
    /// The sender's default. ``SigningTransport`` and ``OAuth2Client/send(_:)``
    /// follow, at most ``SigningTransport/maxRedirects`` times, with the token
    /// going along only to the request's own origin and never from `https`
    /// to `http` (`insecure_redirect`); ``CurlTransport`` returns the 3xx.
    case automatic
    /// Follow: `http` and `https` only, at most 10 redirects, never from
    /// `https` to `http`; the request's header fields go only to its own
    /// origin (elsewhere only `Accept`, `Accept-Language`, `Accept-Encoding`,
    /// `User-Agent` and `Cache-Control`), and a redirect that would take its
    /// body to another origin is returned instead of followed.
    case follow
    /// Return the 3xx as the response.
    case never
}

extension HTTPTransportRequest: CustomStringConvertible {
    public var description: String {
        "\(method) \(url.redactingQuery) \(headers.redactedDescription)"
    }
}

extension HTTPTransportRequest: CustomReflectable {
    /// What `dump` and debuggers show: no header value (a bearer token, a
    /// Basic secret) and no body (a client secret, a code), as ``description``.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "method": method.rawValue, "url": url.redactingQuery, "headers": headers.map(\.name.rawName),
                "bodyBytes": body?.count as Any,
            ],
            displayStyle: .struct
        )
    }
}

extension HTTPTransportRequest {
    /// A GET of a provider's JSON document (metadata, a key set): never
    /// follows a redirect, since a document served from elsewhere is not the provider's.
    static func providerDocument(
        _ url: URL, accept: String = "application/json", timeout: Duration?, maxResponseSize: Int
    ) -> HTTPTransportRequest {
        HTTPTransportRequest(
            method: .get,
            url: url,
            headers: [.accept: accept],
            timeout: timeout,
            redirects: .never,
            maxResponseSize: maxResponseSize
        )
    }
}
