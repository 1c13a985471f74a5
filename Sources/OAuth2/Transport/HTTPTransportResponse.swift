#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif
public import HTTPTypes

/// An HTTP response: swift-http-types' status and `HTTPFields`, and the whole body.
///
/// ``head`` and ``init(_:body:url:)`` convert from and to `HTTPTypes.HTTPResponse`.
public struct HTTPTransportResponse: Sendable {
    /// The status of the final response; compare with `200` or `.ok`, or read `status.code`.
    public var status: HTTPResponse.Status
    /// The header fields of the final response, in order.
    public var headers: HTTPFields {
        get {
            switch headerStorage {
            case .fields(let fields): fields
            case .lines(let lines): lines.fields
            }
        }
        set { headerStorage = .fields(newValue) }
    }
    /// The body, at most the request's size limit.
    public var body: Data
    /// The URL that answered: the request's, or the last one after followed redirects.
    public var url: URL?
    /// Whether the answer may come from another URL than ``url`` says and no
    /// one can tell which: a transport the framework does not know followed
    /// redirects on its own. ``SigningTransport`` then does not take its 401
    /// as the token's rejection (the hop that answered may never have seen it).
    package var answeredByUnknownHop = false
    /// Whether nothing but the end of the connection ended the body: an
    /// HTTP/1.x response without `Content-Length` or chunked coding. A
    /// connection cut short then looks like a whole body; a JSON object
    /// shows its own end, a form-encoded body does not. Set by
    /// ``CurlTransport``; other transports leave it `false`.
    var bodyEndedWithConnection = false
    /// The fields as given, or the lines ``CurlTransport`` read, parsed each
    /// time ``headers`` is read until it is set (a response's fields are
    /// rarely read, and then once or twice).
    private var headerStorage: HeaderStorage

    private enum HeaderStorage: Sendable {
        case fields(HTTPFields)
        case lines(ResponseHeaderLines)
    }

    /// Creates a response.
    public init(status: HTTPResponse.Status, headers: HTTPFields = [:], body: Data = Data(), url: URL? = nil) {
        self.status = status
        self.headerStorage = .fields(headers)
        self.body = body
        self.url = url
    }

    /// A response whose fields are parsed from `headerLines` when read.
    init(status: HTTPResponse.Status, headerLines: ResponseHeaderLines, body: Data, url: URL?, bodyEndedWithConnection: Bool = false) {
        self.status = status
        self.headerStorage = .lines(headerLines)
        self.body = body
        self.url = url
        self.bodyEndedWithConnection = bodyEndedWithConnection
    }

    /// Creates a response from a swift-http-types response head and a body.
    public init(_ head: HTTPResponse, body: Data = Data(), url: URL? = nil) {
        self.init(status: head.status, headers: head.headerFields, body: body, url: url)
    }

    /// The response head as swift-http-types spells it.
    public var head: HTTPResponse {
        HTTPResponse(status: status, headerFields: headers)
    }

    /// The body decoded as UTF-8, invalid bytes replaced.
    public var bodyText: String {
        String(decoding: body, as: UTF8.self)
    }
}

extension HTTPTransportResponse: CustomStringConvertible {
    /// Status, header names and body size; the body itself may hold tokens.
    public var description: String {
        "HTTPTransportResponse(\(status.code), \(headers.redactedDescription), \(body.count) bytes)"
    }
}

extension HTTPTransportResponse: CustomReflectable {
    /// What `dump` and debuggers show: header names and the body's size, as ``description``.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: ["status": status.code, "headers": headers.map(\.name.rawName), "bodyBytes": body.count],
            displayStyle: .struct
        )
    }
}
