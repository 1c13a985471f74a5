#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// Fetching a protected resource's metadata and its authorization server's,
/// under ``DiscoveryRules``.
extension ProtectedResourceMetadata {
    /// Reads the metadata of the resource at `requestedURL`: from
    /// `metadataURL` (a challenge's `resource_metadata`) when given, else
    /// from the well-known URIs (RFC 9728 §3.1, in the MCP authorization
    /// spec's order: `/.well-known/oauth-protected-resource` inserted before
    /// the URL's path, then at the root; a 404 moves on to the next).
    ///
    /// What is checked, so that a resource cannot send the client anywhere
    /// it was not pointed at:
    /// - `requestedURL` is `https` (or loopback `http`); `metadataURL` is on
    ///   its origin (scheme, host and port), else `resource_mismatch`.
    /// - No redirect is followed, a document is at most
    ///   ``DiscoveryRules/maxDocumentSize`` bytes and takes at most
    ///   ``DiscoveryRules/timeout``.
    /// - The document is a JSON object with a string `resource`, a non-empty
    ///   `authorization_servers` array of strings, and the other RFC 9728
    ///   fields of their types; `resource` matches `requestedURL`
    ///   (``matches(resource:requestedURL:)``, else `resource_mismatch`).
    /// - Each authorization server is an absolute URL without query, fragment
    ///   or user info; `https`, or `http` to a loopback host only when
    ///   `requestedURL` is on a loopback host too; in
    ///   ``DiscoveryRules/allowedAuthorizationServers`` when that is set; and
    ///   not on a loopback, private, link-local (or otherwise internal) IP
    ///   literal or `localhost`, nor on a numeric host a resolver could read
    ///   as one, unless `requestedURL` is on such a host itself or
    ///   ``DiscoveryRules/allowsPrivateAuthorizationServers`` is set.
    ///
    /// An authorization server that breaks these rules is left out of the
    /// answer's ``authorizationServers`` (the others keep their order); when
    /// none is left, the whole document is refused with
    /// `invalid_resource_metadata`. A DNS name is judged by its text only: a
    /// name that resolves to a private address is not caught here.
    ///
    /// - Throws: `insecure_endpoint` for an `http` `requestedURL` to a host
    ///   that is not loopback; `resource_mismatch`; `invalid_resource_metadata`;
    ///   `unexpected_redirect`, `response_too_large`, `rate_limited`,
    ///   `http_error` (a 404 from the last well-known URI, or from `metadataURL`);
    ///   `timeout`, `tls_error`, `transport_error` when no answer came.
    public static func fetch(
        for requestedURL: URL,
        metadataURL: URL? = nil,
        rules: DiscoveryRules = DiscoveryRules(),
        transport: any HTTPTransport
    ) async throws(OAuth2Error) -> ProtectedResourceMetadata {
        let transport = rules.guarding(transport)
        let requested = try requestedParts(requestedURL)
        let candidates: [URL]
        if let metadataURL {
            try requireOnOrigin(metadataURL, of: requested)
            candidates = [metadataURL]
        } else {
            candidates = try wellKnownURLs(for: requested)
        }
        var index = 0
        while true {
            let request = HTTPTransportRequest.providerDocument(
                candidates[index], timeout: rules.timeout, maxResponseSize: rules.maxDocumentSize
            )
            do throws(OAuth2Error) {
                let response = try await OAuth2Error.performing(request, on: transport)
                return try parse(response, requestedURL: requestedURL, rules: rules)
            } catch  where error.httpStatus == 404 && index + 1 < candidates.count {
                index += 1
            }
        }
    }

    /// Whether a metadata document's `resource` may stand for `requestedURL`:
    /// identical, or the same origin with a path that is a prefix of the
    /// URL's at a `/` boundary (the MCP SDKs' and the rfc9728bis draft's
    /// rule); nothing looser.
    ///
    /// The origins are compared with scheme and host case-insensitive and the
    /// scheme's default port filled in; paths are compared as written
    /// (case-sensitive, percent-encoding not decoded), a trailing `/` on
    /// either side ignored. A `resource` with a query, a fragment or user
    /// info never matches, nor does a path on either side with a `.` or `..`
    /// segment (which would make a prefix say nothing about where a request goes).
    public static func matches(resource: String, requestedURL: URL) -> Bool {
        guard let resource = URLParts(resource[...]), resource.isHTTP, resource.query == nil, resource.fragment == nil,
            resource.userinfo == nil, let resourceOrigin = Origin(resource),
            let requested = URLParts(requestedURL.absoluteString[...]), let requestedOrigin = Origin(requested),
            resourceOrigin == requestedOrigin, !hasDotSegment(resource.path), !hasDotSegment(requested.path)
        else { return false }
        func directory(_ path: Substring) -> String {
            path.hasSuffix("/") ? String(path) : "\(path)/"
        }
        return directory(requested.path).hasPrefix(directory(resource.path))
    }
}

extension ProtectedResourceMetadata {
    /// An `http(s)` origin compared the way browsers do: scheme and host
    /// lower-cased, the default port filled in.
    struct Origin: Equatable {
        var scheme: String
        var host: String
        var port: Int

        init?(_ parts: URLParts) {
            guard parts.isHTTP, let host = parts.host, !host.isEmpty, let port = parts.effectivePort else { return nil }
            scheme = parts.scheme.lowercased()
            self.host = host.lowercased()
            self.port = port
        }
    }

    /// Whether a path has a `.` or `..` segment, percent-encoded or not.
    static func hasDotSegment(_ path: Substring) -> Bool {
        path.split(separator: "/", omittingEmptySubsequences: false).contains { segment in
            let decoded = segment.lowercased().replacing("%2e", with: ".")
            return decoded == "." || decoded == ".."
        }
    }

    /// The parts of the URL the app asked for, which must be one a token may go to.
    static func requestedParts(_ url: URL) throws(OAuth2Error) -> URLParts {
        guard let parts = URLParts(url.absoluteString[...]), Origin(parts) != nil else {
            throw OAuth2Error(code: .invalidConfiguration, message: "the protected resource's URL is not an absolute http(s) URL")
        }
        try EndpointPolicy.requireSecure(url, role: "protected resource")
        return parts
    }

    /// Throws `resource_mismatch` unless a challenge's `resource_metadata` is on the requested URL's origin.
    static func requireOnOrigin(_ metadataURL: URL, of requested: URLParts) throws(OAuth2Error) {
        guard let parts = URLParts(metadataURL.absoluteString[...]), let origin = Origin(parts), origin == Origin(requested) else {
            throw OAuth2Error(
                code: .resourceMismatch,
                message: "the resource's resource_metadata is not on the origin of the URL asked for, and is not fetched"
            )
        }
    }

    /// RFC 9728 §3.1's well-known URIs of a resource URL, in the MCP
    /// authorization spec's order: inserted before the path (a trailing `/`
    /// dropped; the query is the request's, not the resource's), then at the root.
    static func wellKnownURLs(for requested: URLParts) throws(OAuth2Error) -> [URL] {
        guard let host = requested.host else { return [] }
        var origin = "\(requested.scheme.lowercased())://\(host)"
        if let port = requested.port, !port.isEmpty { origin += ":\(port)" }
        var path = requested.path
        while path.hasSuffix("/") { path = path.dropLast() }
        let texts = path.isEmpty ? [""] : [String(path), ""]
        var urls: [URL] = []
        for suffix in texts {
            guard let url = URL(string: "\(origin)/.well-known/oauth-protected-resource\(suffix)") else {
                throw OAuth2Error(code: .invalidConfiguration, message: "the resource's metadata URL could not be built")
            }
            urls.append(url)
        }
        return urls
    }

    /// Parses and checks a protected resource metadata document fetched for `requestedURL`.
    ///
    /// - Throws: the status errors of ``ProviderResponse/requireSuccess(_:endpoint:maxBodySize:now:)``;
    ///   `invalid_resource_metadata`; `resource_mismatch`.
    package static func parse(
        _ response: HTTPTransportResponse,
        requestedURL: URL,
        rules: DiscoveryRules
    ) throws(OAuth2Error) -> ProtectedResourceMetadata {
        let endpoint = "protected resource metadata endpoint"
        try ProviderResponse.requireSuccess(response, endpoint: endpoint, maxBodySize: rules.maxDocumentSize, now: nil)
        func invalid(_ problem: String) -> OAuth2Error {
            OAuth2Error(
                code: .invalidResourceMetadata, message: "the protected resource's metadata \(problem)", httpStatus: response.status.code)
        }
        guard ProviderResponse.bodyFormat(of: response) == .json else { throw invalid("is not JSON") }
        let object: [String: JSONValue]
        do throws(OAuth2Error) {
            object = try ProviderResponse.object(of: response, endpoint: endpoint)
        } catch {
            throw invalid("is not a JSON object")
        }

        guard let resource = object[CodingKeys.resource.rawValue]?.stringValue else { throw invalid("has no resource") }
        guard let resourceParts = URLParts(resource[...]), Origin(resourceParts) != nil, resourceParts.fragment == nil else {
            throw invalid("has a resource that is not an absolute http(s) URL without a fragment")
        }
        guard matches(resource: resource, requestedURL: requestedURL) else {
            throw OAuth2Error(
                code: .resourceMismatch,
                message: "the protected resource's metadata names another resource than the URL asked for (RFC 9728 §3.3)",
                httpStatus: response.status.code
            )
        }

        func strings(_ key: CodingKeys) throws(OAuth2Error) -> [String] {
            try ProviderResponse.strings(key.rawValue, in: object, invalid) ?? []
        }
        func flag(_ key: CodingKeys) throws(OAuth2Error) -> Bool {
            try ProviderResponse.flag(key.rawValue, in: object, invalid) ?? false
        }
        let resourceName: String?
        switch object[CodingKeys.resourceName.rawValue] {
        case nil, .null?: resourceName = nil
        case .string(let name)?: resourceName = OAuth2Error.sanitize(name)
        default: throw invalid("has a resource_name that is not a string")
        }

        let named = try strings(.authorizationServers)
        guard !named.isEmpty else { throw invalid("names no authorization server") }
        let requested = try requestedParts(requestedURL)
        var allowed: [String] = []
        var firstRefusal: String?
        for issuer in named where !allowed.contains(issuer) {
            if let refusal = refusal(ofAuthorizationServer: issuer, requested: requested, rules: rules) {
                firstRefusal = firstRefusal ?? refusal
            } else {
                allowed.append(issuer)
            }
        }
        guard !allowed.isEmpty else {
            throw invalid("names no authorization server this client may use: the first \(firstRefusal ?? "is refused")")
        }

        return ProtectedResourceMetadata(
            resource: resource,
            authorizationServers: allowed,
            scopesSupported: try strings(.scopesSupported),
            bearerMethodsSupported: try strings(.bearerMethodsSupported),
            dpopSigningAlgValuesSupported: try strings(.dpopSigningAlgValuesSupported),
            dpopBoundAccessTokensRequired: try flag(.dpopBoundAccessTokensRequired),
            tlsClientCertificateBoundAccessTokens: try flag(.tlsClientCertificateBoundAccessTokens),
            resourceName: resourceName
        )
    }

    /// Why an authorization server a resource names may not be used, or `nil` when it may.
    ///
    /// The reasons are the framework's own words, never the server's text.
    static func refusal(ofAuthorizationServer issuer: String, requested: URLParts, rules: DiscoveryRules) -> String? {
        guard let parts = URLParts(issuer[...]), parts.isHTTP, let host = parts.host, !host.isEmpty, parts.effectivePort != nil else {
            return "is not an absolute http(s) URL"
        }
        guard parts.query == nil, parts.fragment == nil, parts.userinfo == nil else {
            return "has a query, a fragment or user info (RFC 8414 §2)"
        }
        if let allowed = rules.allowedAuthorizationServers, !allowed.contains(issuer) {
            return "is not among the allowed authorization servers"
        }
        let requestedHost = requested.host ?? ""
        if parts.scheme.lowercased() != "https" {
            guard EndpointPolicy.isLoopback(host: String(host)) else { return "is http to a host that is not loopback" }
            guard EndpointPolicy.isLoopback(host: String(requestedHost)) else {
                return "is http on loopback, which only a resource on loopback may name"
            }
        }
        switch HostAddress(host: host) {
        case .name, .publicAddress:
            return nil
        case .internalAddress, .ambiguous:
            if rules.allowsPrivateAuthorizationServers { return nil }
            switch HostAddress(host: requestedHost) {
            case .internalAddress, .ambiguous: return nil
            case .name, .publicAddress:
                return "is on a loopback, private or link-local address, which a resource on a public host may not name"
            }
        }
    }
}

extension AuthorizationServerMetadata {
    /// Discovers an authorization server named by a protected resource, in
    /// the MCP authorization spec's order: RFC 8414 path-inserted, OpenID
    /// Connect path-inserted, OpenID Connect path-appended (for an issuer
    /// without a path: RFC 8414, then OpenID Connect). The first document
    /// found must name exactly `issuer`; a 404 moves on, any other failure is thrown.
    ///
    /// Each request is held to `rules` (no redirect, ``DiscoveryRules/maxDocumentSize``,
    /// ``DiscoveryRules/timeout``); an issuer outside
    /// ``DiscoveryRules/allowedAuthorizationServers``, when that is set, is not fetched.
    /// The SSRF rule of ``ProtectedResourceMetadata/fetch(for:metadataURL:rules:transport:)``
    /// goes one step further: a server on a public host whose metadata names
    /// an endpoint the client sends requests to (token, revocation, device
    /// authorization, JWKS, userinfo, pushed authorization, registration, a
    /// mutual TLS alias) on an internal or ambiguous address is refused, unless
    /// ``DiscoveryRules/allowsPrivateAuthorizationServers`` is set.
    ///
    /// - Throws: `issuer_mismatch`, `insecure_endpoint` (an endpoint that is
    ///   not `https`, or on an internal address), the errors of a bad answer;
    ///   `invalid_configuration` for an issuer that is not an absolute `http(s)`
    ///   URL without query or fragment, or that the rules do not allow;
    ///   `http_error` when every document is missing (404).
    public static func discover(
        authorizationServer issuer: String,
        rules: DiscoveryRules = DiscoveryRules(),
        transport: any HTTPTransport
    ) async throws(OAuth2Error) -> AuthorizationServerMetadata {
        let transport = rules.guarding(transport)
        if let allowed = rules.allowedAuthorizationServers, !allowed.contains(issuer) {
            throw OAuth2Error(code: .invalidConfiguration, message: "the discovery rules do not allow this authorization server")
        }
        let documents = try discoveryOrder(forIssuer: issuer)
        var index = 0
        while true {
            let metadata: AuthorizationServerMetadata
            do throws(OAuth2Error) {
                metadata = try await fetch(
                    issuer: issuer, document: documents[index], transport: transport,
                    timeout: rules.timeout, maxResponseSize: rules.maxDocumentSize
                )
            } catch  where error.httpStatus == 404 && index + 1 < documents.count {
                index += 1
                continue
            }
            try requireNoInternalEndpoints(metadata, rules: rules)
            return metadata
        }
    }

    /// Throws `insecure_endpoint` when a server on a public host names an
    /// endpoint the client sends requests to on an internal or ambiguous
    /// address (``HostAddress``), unless the rules allow private servers.
    static func requireNoInternalEndpoints(_ metadata: AuthorizationServerMetadata, rules: DiscoveryRules) throws(OAuth2Error) {
        guard !rules.allowsPrivateAuthorizationServers, let issuerHost = URLParts(metadata.issuer[...])?.host else { return }
        switch HostAddress(host: issuerHost) {
        case .internalAddress, .ambiguous: return
        case .name, .publicAddress: break
        }
        let fetched: [(name: String, url: URL?)] =
            [
                ("token_endpoint", metadata.tokenEndpoint), ("revocation_endpoint", metadata.revocationEndpoint),
                ("device_authorization_endpoint", metadata.deviceAuthorizationEndpoint), ("jwks_uri", metadata.jwksURI),
                ("userinfo_endpoint", metadata.userinfoEndpoint),
                ("pushed_authorization_request_endpoint", metadata.pushedAuthorizationRequestEndpoint),
                ("registration_endpoint", metadata.registrationEndpoint),
            ] + metadata.mtlsEndpointAliases.values.map { ("an mtls_endpoint_aliases endpoint", $0) }
        for (name, url) in fetched {
            guard let url, let host = URLParts(url.absoluteString[...])?.host else { continue }
            switch HostAddress(host: host) {
            case .name, .publicAddress:
                continue
            case .internalAddress, .ambiguous:
                throw OAuth2Error(
                    code: .insecureEndpoint,
                    message:
                        "the authorization server's \(name) is on a loopback, private or link-local address, which a server on a public host may not name"
                )
            }
        }
    }

    /// The documents the MCP authorization spec tries, in order, for an issuer.
    static func discoveryOrder(forIssuer issuer: String) throws(OAuth2Error) -> [Document] {
        guard let parts = URLParts(issuer[...]), parts.isHTTP else {
            throw OAuth2Error(code: .invalidConfiguration, message: "the issuer is not an absolute http(s) URL")
        }
        var path = parts.path
        while path.hasSuffix("/") { path = path.dropLast() }
        return path.isEmpty
            ? [.oauthAuthorizationServer, .openIDConfiguration]
            : [.oauthAuthorizationServer, .openIDConfigurationPathInserted, .openIDConfiguration]
    }
}
