#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The absolute URL an OpenAPI client's request goes to: the server URL
/// (`baseURL`, which may have a path of its own) followed by the request's
/// path, which already holds the query.
enum OpenAPIRequestURL {
    /// `baseURL` and `path` as one URL, or `nil` when they do not make an
    /// absolute `http` or `https` URL with a host (a server URL with a query
    /// or fragment of its own, characters a URL cannot hold, …).
    ///
    /// Text, not `URLComponents`: its percent-encoded setters trap on
    /// malformed input, and a path is the caller's data.
    static func make(baseURL: URL, path: String?) -> URL? {
        guard baseURL.query == nil, baseURL.fragment == nil else { return nil }
        var base = baseURL.absoluteString
        while base.hasSuffix("/") { base.removeLast() }
        var requestPath = Substring(path ?? "")
        if let fragment = requestPath.firstIndex(of: "#") {
            requestPath = requestPath[..<fragment]
        }
        let separator = requestPath.isEmpty || requestPath.hasPrefix("/") || requestPath.hasPrefix("?") ? "" : "/"
        guard let url = URL(string: base + separator + requestPath),
            let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
            url.host?.isEmpty == false
        else { return nil }
        return url
    }
}
