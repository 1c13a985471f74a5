#if canImport(FoundationEssentials)
package import FoundationEssentials
#else
package import Foundation
#endif

/// Reads a token endpoint's answer (RFC 6749 §5.1, §5.2) into an ``AccessToken``,
/// accepting the provider quirks that are unambiguous (DESIGN.md §5).
///
/// Decisions worth knowing:
/// - An absent `token_type` is read as `Bearer`, as golang/oauth2 does: some
///   providers leave it out. `DPoP` (any case) is accepted only in the answer
///   to a request that carried a DPoP proof (RFC 9449 §5); whether a `Bearer`
///   answer to such a request is acceptable is the caller's decision.
/// - `expires_in` of 0 means the token is already due: it serves the request
///   it came with and is renewed before the next. An absent `expires_in`
///   means no expiry is known; the resource server's 401 tells when the
///   token has expired. A value over ten years is clamped to ten years.
/// - `scope` is split on spaces only (RFC 6749 §3.3): GitHub's `repo,gist` is
///   one scope token. An array of strings is accepted too. An absent, `null`
///   or empty `scope` means the requested scopes. A scope token with a
///   character outside RFC 6749's (a control character, `"`, `\`, non-ASCII)
///   is dropped: scopes are shown in the CLI and in logs.
/// - The access and refresh tokens must be printable ASCII: a line break in a
///   token would split the `Authorization` header it is sent in.
/// - A form-encoded answer whose body only the end of the connection ended
///   (HTTP/1.x without a length, ``HTTPTransportResponse/bodyEndedWithConnection``) is
///   refused: cut short, it still parses, and a truncated refresh token would
///   replace the account's good one. A JSON object shows its own end.
package enum TokenResponseParser {
    /// The longest expiry honoured: ten years.
    package static let maxExpiresIn: Double = 10 * 365 * 86_400

    /// The fields read into the token; every other field goes to `extraFields`.
    private static let knownFields: Set<String> = ["access_token", "token_type", "expires_in", "refresh_token", "scope"]

    /// Parses the answer to a token request sent at `requestedAt`; `dpop`:
    /// the request carried a DPoP proof.
    ///
    /// - Throws: `response_too_large`, `unexpected_redirect`, `rate_limited`,
    ///   the provider's error (any status, including an `error` in a 2xx body),
    ///   `http_error`, `invalid_token_response` or `unsupported_token_type`.
    ///   No message contains a token or any part of the body.
    package static func parse(
        _ response: HTTPTransportResponse,
        requestedAt: Date,
        requestedScopes: [String],
        maxBodySize: Int = 1 << 20,
        dpop: Bool = false
    ) throws(OAuth2Error) -> AccessToken {
        try ProviderResponse.requireSuccess(response, endpoint: "token endpoint", maxBodySize: maxBodySize, now: requestedAt)
        if response.bodyEndedWithConnection && ProviderResponse.bodyFormat(of: response) == .form {
            throw invalid(
                "is form-encoded and has no length (HTTP/1.x without Content-Length or chunked coding): the connection's end may have cut it short",
                response
            )
        }
        let object = try ProviderResponse.object(of: response, endpoint: "token endpoint")
        if let error = ProviderResponse.providerError(in: object, httpStatus: response.status.code) {
            throw error
        }

        guard case .string(let accessToken)? = object["access_token"], !accessToken.isEmpty else {
            throw invalid("has no access_token string", response)
        }
        guard ProviderResponse.isVisibleASCII(accessToken) else {
            throw invalid("has an access_token with characters outside printable ASCII", response)
        }

        let tokenType: String
        switch object["token_type"] {
        case nil, .null?:
            tokenType = "Bearer"
        case .string(let value)?:
            guard value.utf8.equalsIgnoringASCIICase("bearer") || (dpop && value.utf8.equalsIgnoringASCIICase("dpop")) else {
                throw OAuth2Error(
                    code: .unsupportedTokenType,
                    message:
                        "the token type \(OAuth2Error.sanitize(String(value.prefix(40)))) is not supported; only Bearer is\(dpop ? ", and DPoP" : " (and DPoP when the request carried a DPoP proof)")",
                    httpStatus: response.status.code
                )
            }
            tokenType = value
        default:
            throw invalid("has a token_type that is not a string", response)
        }

        let expiresAt: Date?
        switch ProviderResponse.seconds(object["expires_in"]) {
        case .absent:
            expiresAt = nil
        case .value(let seconds):
            // 0 means the token is already due: used for the request it came
            // with, renewed before the next use. It never means "no expiry".
            expiresAt = requestedAt.addingTimeInterval(min(seconds, maxExpiresIn))
        case .invalid:
            throw invalid("has an expires_in that is not a non-negative number", response)
        }

        let refreshToken: Secret?
        switch object["refresh_token"] {
        case nil, .null?:
            refreshToken = nil
        case .string(let value)?:
            guard value.isEmpty || ProviderResponse.isVisibleASCII(value) else {
                throw invalid("has a refresh_token with characters outside printable ASCII", response)
            }
            refreshToken = value.isEmpty ? nil : Secret(value)
        default:
            throw invalid("has a refresh_token that is not a string", response)
        }

        let scopes: [String]
        switch object["scope"] {
        case nil, .null?:
            scopes = requestedScopes
        case .string(let value)?:
            scopes = value.isEmpty ? requestedScopes : ProviderText.scopeTokens(value)
        case .array(let values)?:
            var tokens: [String] = []
            for value in values {
                guard case .string(let token) = value else {
                    throw invalid("has a scope array with a non-string element", response)
                }
                if ProviderText.isScopeToken(some: token[...]) { tokens.append(token) }
            }
            scopes = tokens.isEmpty ? requestedScopes : tokens
        default:
            throw invalid("has a scope that is neither a string nor an array of strings", response)
        }

        var token = AccessToken(
            accessToken: Secret(accessToken),
            tokenType: tokenType,
            expiresAt: expiresAt,
            refreshToken: refreshToken,
            scopes: scopes,
            extraFields: object.filter { !knownFields.contains($0.key) }
        )
        token.issuedAt = requestedAt
        return token
    }

    /// The provider's OAuth error object in a response of any status, if its
    /// body (JSON or form) has a string `error`; used for the revocation and
    /// device endpoints too.
    static func providerError(from response: HTTPTransportResponse) -> OAuth2Error? {
        ProviderResponse.providerError(in: response)
    }

    private static func invalid(_ problem: String, _ response: HTTPTransportResponse) -> OAuth2Error {
        OAuth2Error(code: .invalidTokenResponse, message: "the token endpoint's answer \(problem)", httpStatus: response.status.code)
    }
}
