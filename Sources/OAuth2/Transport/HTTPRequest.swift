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
    /// Whether the transport follows redirects (`http`/`https` only, at most 10).
    ///
    /// Off by default: a token request that followed a 307 would replay the
    /// client secret to another host.
    public var followRedirects: Bool
    /// The largest response body accepted, or `nil` for the transport's default.
    public var maxResponseSize: Int?

    /// Creates a request.
    public init(
        method: String = "GET",
        url: URL,
        headers: HTTPHeaders = [:],
        body: Data? = nil,
        timeout: Duration? = nil,
        followRedirects: Bool = false,
        maxResponseSize: Int? = nil
    ) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.timeout = timeout
        self.followRedirects = followRedirects
        self.maxResponseSize = maxResponseSize
    }
}

extension HTTPRequest: CustomStringConvertible {
    public var description: String {
        "\(method) \(url.redactingQuery) \(headers)"
    }
}
