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
    /// from the well-known URIs (RFC 9728 §3.1: path-inserted, then the root).
    ///
    /// The `resource` it names must match `requestedURL` (``matches(resource:requestedURL:)``);
    /// `metadataURL` must be on `requestedURL`'s origin; every authorization
    /// server must be `https` (loopback `http`) and allowed by `rules`.
    ///
    /// - Throws: `resource_mismatch`, `invalid_resource_metadata`,
    ///   `unexpected_redirect`, `response_too_large`, `http_error`, the transport's errors.
    public static func fetch(
        for requestedURL: URL,
        metadataURL: URL? = nil,
        rules: DiscoveryRules = DiscoveryRules(),
        transport: any HTTPTransport
    ) async throws(OAuth2Error) -> ProtectedResourceMetadata {
        throw OAuth2Error(code: .invalidConfiguration, message: "protected resource discovery is not built yet")
    }

    /// Whether a metadata document's `resource` may stand for `requestedURL`:
    /// identical, or the same origin with a path that is a prefix of the
    /// URL's at a `/` boundary (the MCP SDKs' and the rfc9728bis draft's
    /// rule); nothing looser.
    public static func matches(resource: String, requestedURL: URL) -> Bool {
        false
    }
}

extension AuthorizationServerMetadata {
    /// Discovers an authorization server named by a protected resource, in
    /// the MCP authorization spec's order: RFC 8414 path-inserted, OpenID
    /// Connect path-inserted, OpenID Connect path-appended (for an issuer
    /// without a path: RFC 8414, then OpenID Connect). The first document
    /// found must name exactly `issuer`; a 404 moves on, any other failure is thrown.
    ///
    /// - Throws: `issuer_mismatch`, `insecure_endpoint`, the errors of a bad answer.
    public static func discover(
        authorizationServer issuer: String,
        rules: DiscoveryRules = DiscoveryRules(),
        transport: any HTTPTransport
    ) async throws(OAuth2Error) -> AuthorizationServerMetadata {
        throw OAuth2Error(code: .invalidConfiguration, message: "authorization server discovery is not built yet")
    }
}
