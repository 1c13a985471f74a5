/// The listener's answers: fixed pages that reflect nothing of the request.
enum ListenerResponse {
    /// The redirect was received; the terminal shows the outcome.
    case received
    case notFound
    case methodNotAllowed
    case badRequest
    case tooLong

    /// The whole HTTP/1.1 response.
    var bytes: [UInt8] {
        let (status, title, text) = content
        let body = """
        <!doctype html>
        <html lang="en"><head><meta charset="utf-8"><title>\(title)</title></head>
        <body><h1>\(title)</h1><p>\(text)</p></body></html>

        """
        let head = [
            "HTTP/1.1 \(status)",
            "Content-Type: text/html; charset=utf-8",
            "Content-Length: \(body.utf8.count)",
            "Cache-Control: no-store",
            "Referrer-Policy: no-referrer",
            "X-Content-Type-Options: nosniff",
            "Content-Security-Policy: default-src 'none'",
            "Connection: close",
        ].joined(separator: "\r\n")
        return Array((head + "\r\n\r\n" + body).utf8)
    }

    private var content: (status: String, title: String, text: String) {
        switch self {
        case .received:
            ("200 OK", "Authorization response received", "oauth2 received the provider's answer. You can close this tab and return to the terminal, which shows the result.")
        case .notFound:
            ("404 Not Found", "Not found", "This address is not the one oauth2 is waiting on.")
        case .methodNotAllowed:
            ("405 Method Not Allowed", "Method not allowed", "oauth2 expects the provider to redirect the browser here with GET.")
        case .badRequest:
            ("400 Bad Request", "Bad request", "oauth2 could not read this request.")
        case .tooLong:
            ("414 URI Too Long", "Address too long", "The address is longer than oauth2 accepts.")
        }
    }
}
