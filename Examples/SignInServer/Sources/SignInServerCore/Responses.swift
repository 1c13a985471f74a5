import Foundation
import Hummingbird

/// The app's responses, each with the headers every page needs: never
/// cached (they show a user's data) and never leaking the URL in `Referer`
/// (the callback's query holds the authorization code).
enum Responses {
    /// An HTML page, with a strict Content-Security-Policy: no scripts, forms only to this site.
    static func html(_ page: String, status: HTTPResponse.Status = .ok) -> Response {
        var headers = commonHeaders
        headers[.contentType] = "text/html; charset=utf-8"
        headers[.contentSecurityPolicy] = "default-src 'none'; form-action 'self'; frame-ancestors 'none'"
        return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: page)))
    }

    /// A JSON body, such as the provider's API answer.
    static func json(_ body: Data) -> Response {
        var headers = commonHeaders
        headers[.contentType] = "application/json"
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: body)))
    }

    /// A `303 See Other`: the browser follows it with a GET whatever the request's method.
    static func redirect(to location: String) -> Response {
        var headers = commonHeaders
        headers[.location] = location
        return Response(status: .seeOther, headers: headers)
    }

    private static var commonHeaders: HTTPFields {
        var headers = HTTPFields()
        headers[.cacheControl] = "no-store"
        if let referrerPolicy = HTTPFields.Element.Name("Referrer-Policy") {
            headers[referrerPolicy] = "no-referrer"
        }
        headers[.xContentTypeOptions] = "nosniff"
        return headers
    }
}
