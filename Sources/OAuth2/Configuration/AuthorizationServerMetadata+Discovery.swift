#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension AuthorizationServerMetadata {
    /// Fetches and checks an issuer's RFC 8414 metadata from
    /// `<issuer's origin>/.well-known/oauth-authorization-server<issuer's path>`.
    ///
    /// The answer must name exactly `issuer` (RFC 8414 §3.3) and its
    /// endpoints must be `https` (or loopback `http`). Redirects are not
    /// followed: metadata served from elsewhere is not the issuer's.
    ///
    /// - Parameters:
    ///   - issuer: the issuer identifier, an absolute `https` URL (or loopback `http`)
    ///     without query or fragment.
    ///   - transport: the transport to fetch through.
    ///   - timeout: the longest the request may take; the transport's default when `nil`.
    ///   - maxResponseSize: the largest metadata document accepted.
    /// - Throws: ``OAuth2Error`` `invalid_configuration` or `insecure_endpoint`
    ///   for an unusable issuer; `issuer_mismatch`; `unexpected_redirect`,
    ///   `http_error`, `invalid_token_response` and the other codes of a bad
    ///   answer; `timeout`, `tls_error`, `transport_error` when no answer came.
    public static func fetch(
        issuer: String,
        transport: any HTTPTransport,
        timeout: Duration? = nil,
        maxResponseSize: Int = 1 << 20
    ) async throws(OAuth2Error) -> AuthorizationServerMetadata {
        let url = try wellKnownURL(forIssuer: issuer)
        let request = HTTPRequest(
            method: "GET",
            url: url,
            headers: ["Accept": "application/json"],
            timeout: timeout,
            redirects: .never,
            maxResponseSize: maxResponseSize
        )
        let requestedAt = Date()
        let response = try await OAuth2Error.performing(request, on: transport)
        return try parse(response, expectedIssuer: issuer, requestedAt: requestedAt, maxBodySize: maxResponseSize)
    }
}
