import HTTPTypes
import OAuth2

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

// OAuth2 speaks swift-http-types at its boundary, as OpenAPIRuntime does:
// what is left to convert is the request head plus a body and a URL on one
// side, and the transport's request on the other.

/// The request an ``/OAuth2/HTTPTransport`` sends.
typealias TransportRequest = HTTPTransportRequest
/// The response an ``/OAuth2/HTTPTransport`` returns.
typealias TransportResponse = HTTPTransportResponse

extension TransportRequest {
    /// The request an OpenAPI client built, to `url` (its base URL and path), with `body`.
    init(_ request: HTTPRequest, url: URL, body: Data?) {
        self.init(method: request.method, url: url, headers: request.headerFields, body: body)
    }

    /// What ``SigningTransport`` is given for an OpenAPI client's request:
    /// its method and URL only (the next hop sends the request itself), and
    /// redirects returned, not followed: following them is the next hop's business.
    init(signing request: HTTPRequest, url: URL) {
        self.init(method: request.method, url: url, redirects: .never)
    }

    /// The fields ``SigningTransport`` added for the next hop: `Authorization`
    /// and the tracer's context (`traceparent`, …).
    var addedFields: HTTPFields { headers }
}

extension HTTPRequest {
    /// Whether the caller set an `Authorization` field of its own.
    var hasAuthorization: Bool {
        headerFields[.authorization] != nil
    }

    /// The request with each of `fields` replacing the request's fields of its name.
    func adding(_ fields: HTTPFields) -> HTTPRequest {
        var request = self
        for name in Set(fields.map(\.name)) {
            request.headerFields[fields: name] = fields[fields: name]
        }
        return request
    }
}

extension TransportResponse {
    /// The status and header fields of an OpenAPI transport's response, for
    /// ``SigningTransport`` to read its Bearer challenge; the body stays with the caller.
    init(headOf response: HTTPResponse, url: URL) {
        self.init(response, url: url)
    }
}
