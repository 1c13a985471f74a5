#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// The framework's parsers, reachable from the benchmarks in `Benchmarks/`.
///
/// Not API: SPI (`@_spi(Benchmarks) import OAuth2`) with a leading underscore; it may change or go at any
/// time. It exists because a release build cannot `@testable import`, and the
/// public paths to these parsers (``OAuth2Provider/token(for:)``)
/// also build requests, touch the store and consume the state, which would
/// hide the parsers' own cost.
@_spi(Benchmarks)
public enum _OAuth2Benchmarks {
    /// Parses a token endpoint's answer exactly as a grant does.
    ///
    /// - Throws: the ``OAuth2Error`` a grant would throw for this answer.
    public static func parseTokenResponse(
        _ response: HTTPTransportResponse,
        requestedAt: Date,
        requestedScopes: [String] = []
    ) throws(OAuth2Error) -> AccessToken {
        try TokenResponseParser.parse(response, requestedAt: requestedAt, requestedScopes: requestedScopes)
    }

    /// Validates a redirect against a pending authorization exactly as
    /// the authorization code grant (``OAuth2Grant/authorizationCode(redirect:pending:)-(String,_)``) does, without using up its
    /// state or exchanging the code.
    ///
    /// - Returns: the authorization code.
    /// - Throws: the ``OAuth2Error`` the redirect deserves.
    public static func validateRedirect(_ redirect: String, pending: PendingAuthorization) throws(OAuth2Error) -> Secret {
        try RedirectValidator.validate(redirect, pending: pending)
    }

    /// Prepares a request for libcurl exactly as ``CurlTransport/send(_:)``
    /// does on the caller's thread before libcurl sees it (the URL's checks,
    /// the header list, the body's copy), then lets it go.
    ///
    /// - Throws: the ``HTTPTransportError`` the transport would throw for this request.
    public static func prepareTransfer(_ request: HTTPTransportRequest) throws(HTTPTransportError) {
        _ = try CurlTransfer(request: request, configuration: transferConfiguration)
    }

    private static let transferConfiguration = CurlTransport.Configuration()
}
