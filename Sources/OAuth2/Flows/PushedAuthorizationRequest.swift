#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The pushed authorization request (RFC 9126): the authorization parameters
/// POSTed to the provider with the client's authentication, and the
/// `request_uri` that stands for them in the browser's URL.
enum PushedAuthorizationRequest {
    /// The longest `expires_in` honoured; a longer one is clamped to it.
    static let maxLifetime: Double = 86_400
    /// The longest `request_uri` accepted: it goes into the browser's URL.
    static let maxRequestURILength = 4096

    /// The push itself (RFC 9126 §2.1): `parameters` (the authorization
    /// parameters, or `client_id` and a signed `request`) form-encoded in the
    /// body, authenticated as the token endpoint's requests are
    /// (``TokenRequestBuilder``: Basic, post, a JWT assertion whose `aud` is
    /// the PAR endpoint unless the configuration names one, or `client_id` alone).
    ///
    /// - Throws: `invalid_configuration` without a pushed authorization request
    ///   endpoint, or when a client assertion cannot be signed.
    static func request(
        parameters: [(String, String)],
        configuration: OAuth2Configuration,
        now: Date
    ) throws(OAuth2Error) -> HTTPTransportRequest {
        guard let endpoint = configuration.pushedAuthorizationRequestEndpoint else {
            throw OAuth2Error(
                code: .invalidConfiguration,
                message: "pushing the authorization request needs the pushed authorization request endpoint (RFC 9126 §5)"
            )
        }
        // RFC 9126 §2: the server must accept its issuer, token endpoint or PAR
        // endpoint as the assertion's aud; the PAR endpoint is the one every
        // server takes (glewlwyd 2.7.5 refuses the token endpoint there).
        return try TokenRequestBuilder.request(
            to: endpoint, parameters: parameters, configuration: configuration, now: now, assertionAudience: endpoint)
    }

    /// What the provider answered a push with (RFC 9126 §2.2).
    struct Answer: Sendable, Equatable {
        /// The reference the browser's URL carries instead of the parameters.
        let requestURI: String
        /// When the reference expires, counted from when the push was sent.
        let expiresAt: Date
    }

    /// Parses the answer to a push sent at `requestedAt`.
    ///
    /// - Throws: as ``TokenResponseParser`` does for the status
    ///   (`response_too_large`, `unexpected_redirect`, `rate_limited`, the
    ///   provider's error such as `invalid_request`, `http_error`);
    ///   `invalid_pushed_authorization_response` for a success other than
    ///   201 (or 200), a body that is not a JSON object, a missing, non-string,
    ///   empty, oversized or non-ASCII `request_uri`, or an `expires_in` that
    ///   is missing or not a positive number.
    static func parse(_ response: HTTPTransportResponse, requestedAt: Date, maxBodySize: Int) throws(OAuth2Error) -> Answer {
        let endpoint = "pushed authorization request endpoint"
        try ProviderResponse.requireSuccess(response, endpoint: endpoint, maxBodySize: maxBodySize, now: requestedAt)
        func invalid(_ problem: String) -> OAuth2Error {
            OAuth2Error(
                code: .invalidPushedAuthorizationResponse,
                message: "the \(endpoint)'s answer \(problem)",
                httpStatus: response.status.code
            )
        }
        // RFC 9126 §2.2 says 201; 200 is what a few servers send, and equally clear.
        guard response.status.code == 201 || response.status.code == 200 else {
            throw invalid("has HTTP status \(response.status.code), not 201")
        }
        let object: [String: JSONValue]
        do throws(OAuth2Error) {
            object = try ProviderResponse.object(of: response, endpoint: endpoint)
        } catch {
            throw invalid("is not a JSON object")
        }
        if let error = ProviderResponse.providerError(in: object, httpStatus: response.status.code) {
            throw error
        }
        guard let value = object["request_uri"], value != .null else {
            throw invalid("has no request_uri")
        }
        guard let requestURI = value.stringValue else {
            throw invalid("has a request_uri that is not a string")
        }
        guard ProviderResponse.isVisibleASCII(requestURI), requestURI.utf8.count <= maxRequestURILength,
            !requestURI.utf8.contains(UInt8(ascii: " ")), requestURI.contains(":")
        else {
            throw invalid("has a request_uri that is not a URI of at most \(maxRequestURILength) characters")
        }
        guard case .value(let expiresIn) = ProviderResponse.seconds(object["expires_in"]), expiresIn > 0 else {
            throw invalid("has no positive expires_in")
        }
        return Answer(requestURI: requestURI, expiresAt: requestedAt.addingTimeInterval(min(expiresIn, maxLifetime)))
    }
}
