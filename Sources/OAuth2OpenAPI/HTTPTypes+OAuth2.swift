import HTTPTypes
import OAuth2

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

// OAuth2 speaks swift-http-types at its boundary, as OpenAPIRuntime does:
// what is left is making the transport's request from an OpenAPI request
// head, whose URL is the server URL and the path, and adding fields to a head.

extension HTTPTransportRequest {
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
