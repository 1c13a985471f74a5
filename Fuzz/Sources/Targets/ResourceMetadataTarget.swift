import Foundation
import OAuth2

/// Protected resource metadata (RFC 9728, `ProtectedResourceMetadata.parse`)
/// on hostile documents: what a resource says decides where the client goes next.
///
/// The first byte picks the URL asked for (a public `https` one, a loopback
/// `http` one, one on a private address) and the `Content-Type`; the rest is
/// the body. Checked: no crash; a document is accepted only with a
/// `resource` that `matches` the URL and at least one authorization server,
/// each an absolute `http(s)` URL without query, fragment or user info,
/// `http` only to a loopback host for a loopback resource, and on an
/// internal or ambiguous host (`HostAddress`) only for a resource on one.
enum ResourceMetadataTarget {
    private static let requested = [
        URL(string: "https://mcp.example/api/mcp")!, URL(string: "http://127.0.0.1:8000/res/a/hello")!,
        URL(string: "https://10.0.0.5/mcp")!, URL(string: "https://mcp.example")!,
    ]
    private static let contentTypes: [String?] = ["application/json", nil, "text/plain", "application/x-www-form-urlencoded"]

    static func run(_ bytes: UnsafeRawBufferPointer) {
        guard let selector = bytes.first else { return }
        let url = requested[Int(selector & 0x03)]
        var headers = HTTPFields()
        if let contentType = contentTypes[Int(selector >> 2 & 0x03)] {
            headers.append(HTTPField(name: .contentType, value: contentType))
        }
        let response = HTTPTransportResponse(status: 200, headers: headers, body: Data(bytes.dropFirst()))
        guard let metadata = try? ProtectedResourceMetadata.parse(response, requestedURL: url, rules: DiscoveryRules()) else { return }
        guard ProtectedResourceMetadata.matches(resource: metadata.resource, requestedURL: url) else {
            violation("metadata accepted for a resource that does not match the URL asked for")
        }
        guard !metadata.authorizationServers.isEmpty else { violation("metadata accepted without an authorization server") }
        let requestedHost = URLParts(url.absoluteString[...])?.host ?? ""
        let requestedIsInternal = HostAddress(host: requestedHost) == .internalAddress
        for server in metadata.authorizationServers {
            guard let parts = URLParts(server[...]), parts.isHTTP, let host = parts.host, !host.isEmpty, parts.query == nil,
                parts.fragment == nil, parts.userinfo == nil
            else { violation("an authorization server that is no issuer identifier") }
            if parts.scheme.lowercased() == "http", !(EndpointPolicy.isLoopback(host: String(host)) && url.scheme == "http") {
                violation("a plain http authorization server for a resource that is not on loopback")
            }
            switch HostAddress(host: host) {
            case .name, .publicAddress: break
            case .internalAddress, .ambiguous:
                if !requestedIsInternal { violation("an internal authorization server named by a public resource") }
            }
        }
    }
}
