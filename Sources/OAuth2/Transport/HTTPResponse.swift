#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// An HTTP response: status, header fields and the whole body.
public struct HTTPResponse: Sendable {
    /// The status code of the final response.
    public var status: Int
    /// The header fields of the final response, in order.
    public var headers: HTTPHeaders
    /// The body, at most the request's size limit.
    public var body: Data
    /// The URL that answered: the request's, or the last one after followed redirects.
    public var url: URL?
    /// Whether nothing but the end of the connection ended the body: an
    /// HTTP/1.x response without `Content-Length` or chunked coding. A
    /// connection cut short then looks like a whole body; a JSON object
    /// shows its own end, a form-encoded body does not. Set by
    /// ``CurlTransport``; other transports leave it `false`.
    var bodyEndedWithConnection = false

    /// Creates a response.
    public init(status: Int, headers: HTTPHeaders = [:], body: Data = Data(), url: URL? = nil) {
        self.status = status
        self.headers = headers
        self.body = body
        self.url = url
    }

    /// The body decoded as UTF-8, invalid bytes replaced.
    public var bodyText: String {
        String(decoding: body, as: UTF8.self)
    }
}

extension HTTPResponse: CustomStringConvertible {
    /// Status, header names and body size; the body itself may hold tokens.
    public var description: String {
        "HTTPResponse(\(status), \(headers), \(body.count) bytes)"
    }
}
