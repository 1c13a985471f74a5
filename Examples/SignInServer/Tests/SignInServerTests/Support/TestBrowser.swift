import Synchronization
import Foundation
import OAuth2

/// One browser talking to the app: its own cookie jar, redirects not followed.
///
/// Requests go through the framework's ``CurlTransport``; cookies are
/// handled here (name and value only: the app sets one, host-only, `Path=/`).
/// A request can go to another instance of the app (`at:`) with the same
/// jar, as a browser behind a load balancer would reach any of them.
final class TestBrowser: Sendable {
    /// Every test's requests share one transport, like a browser's connection pool.
    static let transport = CurlTransport()

    let base: URL
    private let jar = Mutex([String: String]())

    init(app: TestApp) {
        base = app.baseURL
    }

    /// The cookies the browser holds.
    var cookies: [String: String] {
        jar.withLock { $0 }
    }

    /// The session cookie's value, if the browser holds one.
    var sessionID: String? {
        jar.withLock { $0.first(where: { $0.key.contains("signin-session") })?.value }
    }

    /// GETs a path (with its query) on the app, or on another instance.
    func get(_ pathAndQuery: String, headers: [(String, String)] = [], at instance: TestApp? = nil) async throws -> HTTPTransportResponse {
        try await send(.get, pathAndQuery, headers: headers, at: instance)
    }

    /// POSTs an empty form to a path on the app, or on another instance.
    func post(_ path: String, headers: [(String, String)] = [], at instance: TestApp? = nil) async throws -> HTTPTransportResponse {
        try await send(.post, path, headers: headers + [("Content-Type", "application/x-www-form-urlencoded")], body: Data(), at: instance)
    }

    /// POSTs a form body to a path, as a browser does: with the cookies for a
    /// same-site POST (from one of the app's own pages, `Origin` the app's),
    /// without them for a cross-site one (`Origin` another site's): a
    /// `SameSite=Lax` cookie is not sent with a cross-site POST.
    func postForm(_ path: String, body: String, from origin: String?, at instance: TestApp? = nil) async throws -> HTTPTransportResponse {
        let sameSite = origin == (instance?.baseURL ?? base).absoluteString.trimmingTrailingSlash
        var headers = [("Content-Type", "application/x-www-form-urlencoded")]
        if let origin { headers.append(("Origin", origin)) }
        return try await send(.post, path, headers: headers, body: Data(body.utf8), at: instance, cookies: sameSite)
    }

    /// GETs the path and query of a URL, whatever its host and port: the
    /// provider's redirect to the app, or to another instance.
    func follow(_ redirect: String, at instance: TestApp? = nil) async throws -> HTTPTransportResponse {
        let url = try requireValue(URL(string: redirect), "not a URL: \(redirect)")
        return try await get(url.path + (url.query.map { "?\($0)" } ?? ""), at: instance)
    }

    private func send(
        _ method: HTTPRequest.Method,
        _ pathAndQuery: String,
        headers: [(String, String)] = [],
        body: Data? = nil,
        at instance: TestApp?,
        cookies: Bool = true
    ) async throws -> HTTPTransportResponse {
        let base = instance?.baseURL ?? base
        let url = try requireValue(URL(string: pathAndQuery, relativeTo: base)?.absoluteURL, "bad path \(pathAndQuery)")
        var fields = HTTPFields(headers.compactMap { name, value in HTTPField.Name(name).map { HTTPField(name: $0, value: value) } })
        let cookieHeader = jar.withLock { $0.map { "\($0.key)=\($0.value)" }.joined(separator: "; ") }
        if cookies, !cookieHeader.isEmpty {
            fields.append(HTTPField(name: .cookie, value: cookieHeader))
        }
        let response = try await Self.transport.send(HTTPTransportRequest(method: method, url: url, headers: fields, body: body))
        for setCookie in response.headers[values: .setCookie] {
            store(setCookie)
        }
        return response
    }

    private func store(_ setCookie: String) {
        let parts = setCookie.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
        guard let pair = parts.first, let equals = pair.firstIndex(of: "=") else { return }
        let name = String(pair[..<equals])
        let value = String(pair[pair.index(after: equals)...])
        let expired = parts.dropFirst().contains { $0.lowercased() == "max-age=0" }
        jar.withLock { jar in
            if expired || value.isEmpty {
                jar.removeValue(forKey: name)
            } else {
                jar[name] = value
            }
        }
    }
}

extension String {
    /// The text without one trailing `/`: a base URL as an `Origin`.
    var trimmingTrailingSlash: String { hasSuffix("/") ? String(dropLast()) : self }
}

extension HTTPTransportResponse {
    /// The `Location` header.
    var location: String? { headers[.location] }
}
