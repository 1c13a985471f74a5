public import HTTPTypes
public import OAuth2
public import OpenAPIRuntime

#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// A swift-openapi-runtime `ClientTransport` over any of the framework's
/// ``/OAuth2/HTTPTransport``s: in an app, its shared ``/OAuth2/CurlTransport``
/// (libcurl), so a generated client needs no SwiftNIO, which the
/// AsyncHTTPClient transport would bring; in tests, a canned one.
///
/// ```swift
/// let transport = CurlTransport()   // the app's one, shared with its OAuth2Provider
/// let client = Client(
///     serverURL: try Servers.Server1.url(),
///     transport: HTTPTransportClientTransport(transport),
///     middlewares: [OAuth2Middleware(tokenSource: account, serverURL: try Servers.Server1.url())]
/// )
/// ```
///
/// - The request goes to the server URL followed by the request's path
///   (which holds the query), with its method and header fields as given.
/// - The request body is read whole, at most ``maxRequestBodySize`` bytes,
///   before anything is sent; the response body comes back whole, bounded
///   by the inner transport (for ``/OAuth2/CurlTransport``,
///   ``/OAuth2/CurlTransport/Configuration/maxResponseSize``, 1 MiB by default).
/// - Redirects are the inner transport's default: ``/OAuth2/CurlTransport``
///   returns them as responses. An ``OAuth2Middleware`` in front learns
///   which URL answered (the response's ``/OAuth2/HTTPTransportResponse/url``,
///   else the request's), so that a 401 counts only from the token's origin.
/// - Any status is a response. When no response arrives, `send` throws the
///   inner transport's error (``/OAuth2/HTTPTransportError`` from
///   ``/OAuth2/CurlTransport``, or `CancellationError`), which the generated
///   client hands on as the `underlyingError` of a `ClientError`. No error
///   message holds a header value or a body.
///
/// Thread-safe; one transport serves every client and task.
public struct HTTPTransportClientTransport: ClientTransport {
    /// The transport requests go through.
    public let transport: any HTTPTransport
    /// The largest request body sent, in bytes (1 MiB by default).
    public var maxRequestBodySize: Int

    /// Sends through `transport`: normally the app's shared ``/OAuth2/CurlTransport``;
    /// any ``/OAuth2/HTTPTransport`` works (in tests, `OAuth2Testing.CannedTransport`).
    ///
    /// Shutting the transport down stays the caller's job.
    public init(_ transport: any HTTPTransport, maxRequestBodySize: Int = 1 << 20) {
        self.transport = transport
        self.maxRequestBodySize = maxRequestBodySize
    }

    /// Sends one request of a generated client and returns the whole response.
    ///
    /// - Throws: ``/OAuth2/HTTPTransportError`` `.unsupportedURL` when the
    ///   server URL and path do not make an absolute `http`/`https` URL,
    ///   `.invalidRequest` for a body over ``maxRequestBodySize``, `.other` for
    ///   a response that HTTPTypes cannot hold (a status outside 100–999, a
    ///   field name that is not a token); any error of the inner transport
    ///   or of the request body's own source, as it is.
    public func send(
        _ request: HTTPTypes.HTTPRequest,
        body: HTTPBody?,
        baseURL: URL,
        operationID: String
    ) async throws -> (HTTPTypes.HTTPResponse, HTTPBody?) {
        guard let url = OpenAPIRequestURL.make(baseURL: baseURL, path: request.path) else {
            throw HTTPTransportError.unsupportedURL.with(
                message: "the server URL and the path of \(operationID) do not make an absolute http or https URL")
        }
        var data: Data?
        if let body {
            guard let collected = try await body.collected(upTo: maxRequestBodySize) else {
                throw HTTPTransportError.invalidRequest.with(
                    message: "the request body of \(operationID) is over the limit of \(maxRequestBodySize) bytes")
            }
            data = collected
        }
        var transportRequest = HTTPTransportRequest(request, url: url, body: data)
        // An OAuth2Middleware in front says which client certificate its signed request presents.
        transportRequest.clientCertificate = HopReport.current?.clientCertificate
        let response = try await transport.send(transportRequest)
        // An OAuth2Middleware in front asks which URL answered (its 401 counts only from the token's origin).
        HopReport.current?.record(response.url ?? url)
        return (response.head, response.body.isEmpty ? nil : HTTPBody(response.body))
    }
}
