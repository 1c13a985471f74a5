import ArgumentParser
import OAuth2

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// `oauth2 call`: a request signed with the stored token (RFC 6750).
struct CallCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "call",
        abstract: "Send a request signed with the stored token and print the response body.",
        discussion: """
            With no provider configured (no --provider, --token-url or --issuer),
            the call configures itself from the URL: the resource's 401 names its
            metadata (RFC 9728), that names the authorization server (RFC 8414),
            the CLI identifies itself there (a client ID metadata document with
            --client-metadata-url when the server supports them, else a dynamic
            registration, RFC 7591, else --client-id), and signs in with PKCE and
            the resource (RFC 8707): the authorize URL is the first line of stdout
            and the redirect is pasted on stdin, as with "oauth2 authorize", or
            received with --listen. What it learned is kept (the registration
            sealed in the store, the provider in providers.json under a name made
            from the server's issuer: host, -port, -path segments), so the next
            call to that resource just works. A resource answering
            insufficient_scope gets one new sign-in with the union of the scopes
            (another URL line on stdout), unless --no-step-up.

            The token is refreshed first when it is about to expire, and once more
            if the server rejects it. Redirects are followed (at most 10); the
            token goes along only to the URL's own origin, and a redirect from
            https to http fails with insecure_redirect; --no-follow-redirects
            prints the 3xx's body instead. The response body goes to stdout as is. An
            HTTP status of 400 or more exits 1 with "error: http_error: …"
            ("forbidden" for 403) after the body; a 429 exits 1 with
            "error: rate_limited: …; retry after N s" when the server says when.
            --data sends a body (POST unless --method says otherwise; form-encoded
            unless a Content-Type header is given); --data @FILE sends a file's
            content, --data @- stdin's.

            Example:
              oauth2 call https://api.example/me
              oauth2 call --listen https://mcp.example/mcp
              oauth2 call https://api.example/items --method POST \\
                  --header "Content-Type: application/json" --data '{"name": "x"}'
            """
    )

    @OptionGroup var common: CommonOptions

    @Argument(help: "The URL to call: https, or http for a loopback host.")
    var url: String

    @Option(help: "The HTTP method (default GET, or POST with --data).")
    var method: String?

    @Option(name: .customLong("header"), help: "A request header, \"Name: value\"; repeat for more.")
    var headers: [String] = []

    @Option(help: "The request body; @FILE reads a file, @- reads stdin.")
    var data: String?

    @Flag(
        inversion: .prefixedNo,
        help: "Follow redirects (the default; at most 10, never from https to http, the token only to its own origin)."
    )
    var followRedirects = true

    @Flag(help: "When the call signs in by itself: receive the redirect on a loopback listener instead of reading it from stdin.")
    var listen = false

    @Option(name: .customLong("listen-timeout"), help: "How long --listen waits for the browser, in seconds.")
    var listenTimeout: Int = 300

    @Option(
        name: .customLong("client-metadata-url"),
        help: ArgumentHelp(
            "When the call signs in by itself: identify with the client ID metadata document at this https URL (OAUTH2_CLIENT_METADATA_URL).",
            discussion:
                "Used as the client_id at an authorization server that advertises client_id_metadata_document_supported; others get a dynamic registration."
        )
    )
    var clientMetadataURL: String?

    @Flag(
        name: .customLong("no-step-up"),
        help:
            "When the resource asks for more scope or a stronger sign-in, fail with insufficient_scope (or insufficient_user_authentication) instead of signing in again."
    )
    var refusesStepUp = false

    func validate() throws {
        guard (1...86_400).contains(listenTimeout) else {
            throw ValidationError("--listen-timeout must be between 1 and 86400 seconds")
        }
        do {
            _ = try metadataDocumentURL()
        } catch let error as UsageError {
            throw ValidationError(error.message)
        }
    }

    /// The largest response body printed.
    static let maxResponseSize = 64 << 20

    func run() async throws {
        guard let target = URL(string: url), target.scheme != nil, target.host != nil else {
            throw UsageError("the URL to call is not an absolute URL")
        }
        guard let method = HTTPRequest.Method(method?.uppercased() ?? (data == nil ? "GET" : "POST")) else {
            throw UsageError("--method is not an HTTP method name")
        }
        var request = HTTPTransportRequest(method: method, url: target)
        for header in headers {
            request.headers.append(try Self.parseHeader(header))
        }
        if let data {
            request.body = try Self.body(data)
            if !request.headers.contains(.contentType) {
                request.headers.append(HTTPField(name: .contentType, value: "application/x-www-form-urlencoded"))
            }
        }
        request.redirects = followRedirects ? .follow : .never
        request.maxResponseSize = Self.maxResponseSize
        try await Session.run(common) { session in
            request.timeout = session.settings.timeout
            let response: HTTPTransportResponse
            if signsInByItself(session.settings) {
                response = try await sendDiscovering(request, session: session)
            } else {
                response = try await session.client().send(request)
            }
            StandardOutput.write(Array(response.body))
            if (300..<400).contains(response.status.code), let location = response.headers[.location] {
                // Only reached with --no-follow-redirects (or a 3xx that is not a redirect).
                let target =
                    URL(string: location, relativeTo: target).map { $0.absoluteURL.redactedForMessages(marksQuery: false) }
                    ?? "an unusable location"
                StandardError.line("note: HTTP \(response.status.code) to \(target), not followed")
            }
            guard response.status.code < 400 else {
                let code: OAuth2Error.Code = response.status == 403 ? .forbidden : .httpError
                throw OAuth2Error(
                    code: code,
                    message: "\(request.method) \(target.redactedForMessages(marksQuery: false)) answered HTTP \(response.status.code)",
                    httpStatus: response.status.code
                )
            }
        }
    }

    /// `Name: value` → its parts; the name an HTTP token, the value free of line breaks.
    static func parseHeader(_ text: String) throws -> HTTPField {
        guard let colon = text.firstIndex(of: ":") else {
            throw UsageError("--header must be \"Name: value\"")
        }
        let rawName = String(text[..<colon])
        let value = String(text[text.index(after: colon)...].trimmingOWS)
        guard let name = HTTPField.Name(rawName) else {
            throw UsageError("--header has an invalid name")
        }
        guard !value.unicodeScalars.contains(where: { $0.value < 0x20 && $0 != "\t" || $0.value == 0x7F }) else {
            throw UsageError("--header \(name) has a control character in its value")
        }
        return HTTPField(name: name, value: value)
    }

    /// The body of `--data`: the text, or a file's (`@FILE`) or stdin's (`@-`) bytes, at most 64 MiB.
    static func body(_ data: String) throws -> Data {
        guard data.hasPrefix("@") else { return Data(data.utf8) }
        let path = String(data.dropFirst())
        let fd = path == "-" ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            throw UsageError("--data: cannot open \(path)")
        }
        defer { if fd != STDIN_FILENO { close(fd) } }
        do {
            return Data(
                try readAll(fd, limit: 64 << 20) { OAuth2Error(code: .invalidRequest, message: "--data: cannot read \(path): \($0)") })
        } catch {
            throw UsageError(error.message)
        }
    }
}
