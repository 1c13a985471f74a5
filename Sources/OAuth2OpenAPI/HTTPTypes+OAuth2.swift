import HTTPTypes
import OAuth2

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

// Every conversion between swift-http-types (what OpenAPIRuntime speaks) and
// the OAuth2 module's own request, response and header types lives in this
// one file: OAuth2 is to adopt swift-http-types at its boundary, and then
// most of this goes. The other files name OAuth2's types only through the
// aliases below.

/// The request an ``OAuth2/HTTPTransport`` sends (not HTTPTypes' `HTTPRequest`).
typealias TransportRequest = OAuth2.HTTPRequest
/// The response an ``OAuth2/HTTPTransport`` returns (not HTTPTypes' `HTTPResponse`).
typealias TransportResponse = OAuth2.HTTPResponse

extension OAuth2.HTTPHeaders {
    /// The fields in order, names as sent.
    init(_ fields: HTTPFields) {
        self.init(fields.map { ($0.name.rawName, $0.value) })
    }
}

extension HTTPFields {
    /// The headers in order.
    ///
    /// - Throws: ``HTTPTransportError`` when a name is not an HTTP token
    ///   (RFC 9110 §5.1); the name and value stay out of the message.
    init(validating headers: OAuth2.HTTPHeaders) throws(HTTPTransportError) {
        self.init()
        reserveCapacity(headers.count)
        for (name, value) in headers {
            guard let fieldName = HTTPField.Name(name) else {
                throw HTTPTransportError.other("the response has a header field whose name is not an HTTP token")
            }
            append(HTTPField(name: fieldName, value: value))
        }
    }
}

extension TransportRequest {
    /// The request an OpenAPI client built, to `url` (its base URL and path), with `body`.
    init(_ request: HTTPTypes.HTTPRequest, url: URL, body: Data?) {
        self.init(method: request.method.rawValue, url: url, headers: OAuth2.HTTPHeaders(request.headerFields), body: body)
    }

    /// What ``SigningTransport`` is given for an OpenAPI client's request:
    /// its method and URL only (the next hop sends the request itself), and
    /// redirects returned, not followed: following them is the next hop's business.
    init(signing request: HTTPTypes.HTTPRequest, url: URL) {
        self.init(method: request.method.rawValue, url: url, redirects: .never)
    }

    /// The `Authorization` field ``SigningTransport`` set, if any.
    var authorization: String? {
        headers["Authorization"]
    }
}

extension HTTPTypes.HTTPRequest {
    /// Whether the caller set an `Authorization` field of its own.
    var hasAuthorization: Bool {
        headerFields[.authorization] != nil
    }

    /// The request with `authorization` as its only `Authorization` field.
    func authorized(_ authorization: String) -> HTTPTypes.HTTPRequest {
        var request = self
        request.headerFields[.authorization] = authorization
        return request
    }
}

extension HTTPTypes.HTTPResponse {
    /// The status and header fields of `response` (its body goes separately).
    ///
    /// - Throws: ``HTTPTransportError`` for a status outside 100–999 or a
    ///   header field name that is not an HTTP token.
    init(validating response: TransportResponse) throws(HTTPTransportError) {
        guard (100...999).contains(response.status) else {
            throw HTTPTransportError.other("the response has status \(response.status), outside 100–999")
        }
        self.init(status: Status(code: response.status), headerFields: try HTTPFields(validating: response.headers))
    }
}

extension TransportResponse {
    /// The status and header fields of an OpenAPI transport's response, for
    /// ``SigningTransport`` to read its Bearer challenge; the body stays with the caller.
    init(headOf response: HTTPTypes.HTTPResponse, url: URL) {
        self.init(status: response.status.code, headers: OAuth2.HTTPHeaders(response.headerFields), url: url)
    }
}
