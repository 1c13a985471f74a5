/// An error from the OAuth 2.0 client: the provider's own error, a rule of the
/// protocol that an answer broke, or a failure to reach the provider.
///
/// ``code`` is stable: a provider's error keeps its own `error` value verbatim
/// (`invalid_grant`, `access_denied`, GitHub's `bad_verification_code`); the
/// framework's own codes are the static members of ``Code``. Compare codes,
/// not messages. No field ever holds a token, secret, password, code or verifier.
public struct OAuth2Error: Error, Sendable, Hashable {
    /// A stable, machine-readable error code.
    public struct Code: RawRepresentable, Hashable, Sendable, ExpressibleByStringLiteral, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public init(stringLiteral value: String) { self.rawValue = value }
        public var description: String { rawValue }

        // The provider's codes of RFC 6749 §4.1.2.1, §5.2 and RFC 6750 §3.1.
        public static let invalidRequest: Code = "invalid_request"
        public static let invalidClient: Code = "invalid_client"
        public static let invalidGrant: Code = "invalid_grant"
        public static let unauthorizedClient: Code = "unauthorized_client"
        public static let unsupportedGrantType: Code = "unsupported_grant_type"
        public static let invalidScope: Code = "invalid_scope"
        public static let accessDenied: Code = "access_denied"
        public static let authorizationPending: Code = "authorization_pending"
        public static let slowDown: Code = "slow_down"
        public static let expiredToken: Code = "expired_token"

        // The framework's own codes.
        public static let insecureEndpoint: Code = "insecure_endpoint"
        public static let insecureRedirect: Code = "insecure_redirect"
        public static let unexpectedRedirect: Code = "unexpected_redirect"
        public static let invalidTokenResponse: Code = "invalid_token_response"
        public static let unsupportedTokenType: Code = "unsupported_token_type"
        public static let responseTooLarge: Code = "response_too_large"
        public static let httpError: Code = "http_error"
        public static let rateLimited: Code = "rate_limited"
        public static let invalidRedirectURL: Code = "invalid_redirect_url"
        public static let urlTooLong: Code = "url_too_long"
        public static let redirectURIMismatch: Code = "redirect_uri_mismatch"
        public static let stateMismatch: Code = "state_mismatch"
        public static let duplicateParameter: Code = "duplicate_parameter"
        public static let invalidParameter: Code = "invalid_parameter"
        public static let missingCode: Code = "missing_code"
        public static let issuerMismatch: Code = "issuer_mismatch"
        public static let missingIssuer: Code = "missing_issuer"
        public static let unexpectedResponse: Code = "unexpected_response"
        public static let invalidToken: Code = "invalid_token"
        public static let unauthorized: Code = "unauthorized"
        public static let insufficientScope: Code = "insufficient_scope"
        public static let forbidden: Code = "forbidden"
        public static let reauthorizationRequired: Code = "reauthorization_required"
        public static let transportError: Code = "transport_error"
        public static let timeout: Code = "timeout"
        public static let tlsError: Code = "tls_error"
        public static let notAuthenticated: Code = "not_authenticated"
        public static let storeError: Code = "store_error"
        public static let invalidConfiguration: Code = "invalid_configuration"
        public static let cancelled: Code = "cancelled"
    }

    /// The stable error code.
    public var code: Code
    /// A human-readable explanation, free of secrets.
    public var message: String
    /// The provider's `error_description`, control characters stripped, when it sent one.
    public var errorDescription: String?
    /// The provider's `error_uri`, when it sent one.
    public var errorURI: String?
    /// The HTTP status of the answer that caused the error, when there was one.
    public var httpStatus: Int?
    /// How long the provider asked to wait (`Retry-After`, `slow_down`), when it said.
    public var retryAfter: Duration?

    /// Creates an error. Never pass a secret in any field.
    public init(
        code: Code,
        message: String,
        errorDescription: String? = nil,
        errorURI: String? = nil,
        httpStatus: Int? = nil,
        retryAfter: Duration? = nil
    ) {
        self.code = code
        self.message = message
        self.errorDescription = errorDescription.map(Self.sanitize)
        self.errorURI = errorURI.map(Self.sanitize)
        self.httpStatus = httpStatus
        self.retryAfter = retryAfter
    }

    /// An error the provider returned, keeping its `error` value verbatim.
    public static func provider(
        error: String,
        description: String?,
        uri: String?,
        httpStatus: Int? = nil
    ) -> OAuth2Error {
        let code = Code(rawValue: sanitize(error))
        let message = description.map(sanitize).flatMap { $0.isEmpty ? nil : $0 } ?? "the provider answered \(code.rawValue)"
        return OAuth2Error(code: code, message: message, errorDescription: description, errorURI: uri, httpStatus: httpStatus)
    }

    /// Strips control characters and bounds the length of text that came from outside.
    static func sanitize(_ text: String) -> String {
        var scalars = String.UnicodeScalarView()
        for scalar in text.unicodeScalars.prefix(512) where !(scalar.properties.generalCategory == .control || scalar.properties.generalCategory == .format) {
            scalars.append(scalar)
        }
        return String(scalars)
    }
}

extension OAuth2Error: CustomStringConvertible {
    /// `<code>: <message>`, the form the CLI prints.
    public var description: String {
        "\(code.rawValue): \(message)"
    }
}
