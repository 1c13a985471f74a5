/// The receiver's answers: fixed pages that reflect nothing of the request.
enum ReceiverPage: Sendable {
    /// The redirect was received; the app shows the outcome.
    case received
    /// Another path.
    case notFound
    /// The redirect path with another method than GET.
    case methodNotAllowed
    /// Not an HTTP request line.
    case badRequest
    /// A request line over ``LoopbackReceiver/maxRequestLine``.
    case tooLong
    /// The redirect path without the expected `state`: forged, stale, or from another sign-in.
    case stateMismatch
}

/// The pages, worded with the app's name.
struct ReceiverPages: Sendable {
    /// The name as it appears inside a sentence, HTML-escaped.
    private let name: String
    /// The name as it starts a sentence, HTML-escaped.
    private let capitalizedName: String

    /// - Parameter applicationName: `nil` for "this program".
    init(applicationName: String?) {
        if let applicationName, !applicationName.isEmpty {
            name = Self.escape(applicationName)
            capitalizedName = name
        } else {
            name = "this program"
            capitalizedName = "This program"
        }
    }

    /// The whole HTTP/1.1 response for `page`.
    func response(_ page: ReceiverPage) -> [UInt8] {
        let (status, title, text) = content(page)
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

    private func content(_ page: ReceiverPage) -> (status: String, title: String, text: String) {
        switch page {
        case .received:
            (
                "200 OK", "Authorization response received",
                "\(capitalizedName) received the provider's answer. You can close this tab and return to the terminal, which shows the result."
            )
        case .notFound:
            ("404 Not Found", "Not found", "This address is not the one \(name) is waiting on.")
        case .methodNotAllowed:
            (
                "405 Method Not Allowed", "Method not allowed",
                "\(capitalizedName) expects the provider to redirect the browser here with GET."
            )
        case .badRequest:
            ("400 Bad Request", "Bad request", "\(capitalizedName) could not read this request.")
        case .tooLong:
            ("414 URI Too Long", "Address too long", "The address is longer than \(name) accepts.")
        case .stateMismatch:
            (
                "400 Bad Request", "Not the expected answer",
                "This answer does not belong to the sign-in \(name) started (its state does not match), so \(name) ignored it and keeps waiting. Sign in from the address \(name) showed."
            )
        }
    }

    /// Escapes text for HTML content.
    private static func escape(_ text: String) -> String {
        var escaped = ""
        for character in text {
            switch character {
            case "&": escaped += "&amp;"
            case "<": escaped += "&lt;"
            case ">": escaped += "&gt;"
            case "\"": escaped += "&quot;"
            case "'": escaped += "&#39;"
            default: escaped.append(character)
            }
        }
        return escaped
    }
}
