#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

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
        /// The code as it appears on the wire and in the CLI's `error: <code>:` line.
        public let rawValue: String
        /// A code from its wire form, such as a provider's non-standard `bad_verification_code`.
        public init(rawValue: String) { self.rawValue = rawValue }
        /// A code from a literal.
        public init(stringLiteral value: String) { self.rawValue = value }
        public var description: String { rawValue }

        // The provider's codes of RFC 6749 §4.1.2.1, §5.2 and RFC 6750 §3.1.
        /// The provider found the request malformed (RFC 6749 §5.2).
        public static let invalidRequest: Code = "invalid_request"
        /// The provider could not authenticate the client.
        public static let invalidClient: Code = "invalid_client"
        /// The code, refresh token or credentials are invalid, expired or revoked.
        public static let invalidGrant: Code = "invalid_grant"
        /// The client may not use this grant.
        public static let unauthorizedClient: Code = "unauthorized_client"
        /// The provider does not support this grant.
        public static let unsupportedGrantType: Code = "unsupported_grant_type"
        /// A requested scope is invalid or exceeds what was granted.
        public static let invalidScope: Code = "invalid_scope"
        /// The user or the provider refused the authorization.
        public static let accessDenied: Code = "access_denied"
        /// Device flow: the user has not approved yet (RFC 8628 §3.5).
        public static let authorizationPending: Code = "authorization_pending"
        /// Device flow: poll less often (RFC 8628 §3.5).
        public static let slowDown: Code = "slow_down"
        /// Device flow: the device code expired (RFC 8628 §3.5).
        public static let expiredToken: Code = "expired_token"

        // The framework's own codes.
        /// An `http` URL for a non-loopback host (an endpoint, or a signed request).
        public static let insecureEndpoint: Code = "insecure_endpoint"
        /// A signed request was redirected from `https` to `http`.
        public static let insecureRedirect: Code = "insecure_redirect"
        /// The token, revocation or device endpoint answered with a redirect.
        public static let unexpectedRedirect: Code = "unexpected_redirect"
        /// The token endpoint's answer is not a usable token response.
        public static let invalidTokenResponse: Code = "invalid_token_response"
        /// `token_type` is not Bearer.
        public static let unsupportedTokenType: Code = "unsupported_token_type"
        /// A response body over the limit.
        public static let responseTooLarge: Code = "response_too_large"
        /// An HTTP error status with no OAuth error object.
        public static let httpError: Code = "http_error"
        /// HTTP 429; `retryAfter` holds `Retry-After` when given.
        public static let rateLimited: Code = "rate_limited"
        /// The redirect is not an absolute URL of the expected form.
        public static let invalidRedirectURL: Code = "invalid_redirect_url"
        /// The redirect (or a listener's request line) is over the size cap.
        public static let urlTooLong: Code = "url_too_long"
        /// The redirect's scheme, host, port or path differ from the redirect URI sent.
        public static let redirectURIMismatch: Code = "redirect_uri_mismatch"
        /// `state` is missing, different, or already used.
        public static let stateMismatch: Code = "state_mismatch"
        /// A response parameter appears more than once.
        public static let duplicateParameter: Code = "duplicate_parameter"
        /// A value with characters RFC 6749 forbids (control characters, bad encoding).
        public static let invalidParameter: Code = "invalid_parameter"
        /// The redirect has neither `code` nor `error`.
        public static let missingCode: Code = "missing_code"
        /// RFC 9207 `iss` differs from the expected issuer.
        public static let issuerMismatch: Code = "issuer_mismatch"
        /// RFC 9207 `iss` is absent while the provider promised it.
        public static let missingIssuer: Code = "missing_issuer"
        /// A token delivered in the redirect (front channel).
        public static let unexpectedResponse: Code = "unexpected_response"
        /// The resource server rejected the token after one refresh and one retry.
        public static let invalidToken: Code = "invalid_token"
        /// A 401 with no Bearer challenge to act on.
        public static let unauthorized: Code = "unauthorized"
        /// A 403 naming `insufficient_scope` (not refreshed).
        public static let insufficientScope: Code = "insufficient_scope"
        /// Any other 403.
        public static let forbidden: Code = "forbidden"
        /// A signed request's automatic refresh got `invalid_grant`: the stored token was deleted.
        public static let reauthorizationRequired: Code = "reauthorization_required"
        /// The request did not complete (connection refused or lost, …).
        public static let transportError: Code = "transport_error"
        /// The request timed out.
        public static let timeout: Code = "timeout"
        /// The TLS handshake or certificate verification failed.
        public static let tlsError: Code = "tls_error"
        /// No token is stored for this account.
        public static let notAuthenticated: Code = "not_authenticated"
        /// The token store could not be read or written.
        public static let storeError: Code = "store_error"
        /// Another process (or task) held the account's store lock for longer than the timeout.
        public static let lockTimeout: Code = "lock_timeout"
        /// The stored token was issued to another provider or client than the configuration's; it was not used.
        public static let providerMismatch: Code = "provider_mismatch"
        /// The configuration or a call's arguments cannot work (missing endpoint, password grant not enabled, …).
        public static let invalidConfiguration: Code = "invalid_configuration"
        /// The task was cancelled.
        public static let cancelled: Code = "cancelled"
        /// The pushed authorization request endpoint's answer (RFC 9126 §2.2)
        /// is not usable: another success status than 201, no string
        /// `request_uri`, no positive `expires_in`, a body that is not a JSON object.
        public static let invalidPushedAuthorizationResponse: Code = "invalid_pushed_authorization_response"
        /// The pushed authorization request behind an authorization URL expired
        /// (RFC 9126 §2.2 `expires_in`) before the user was sent to it: start a new authorization.
        public static let pushedRequestExpired: Code = "pushed_request_expired"

        // DPoP (RFC 9449).
        /// The server asked for a DPoP nonce (`use_dpop_nonce`) again after the
        /// one retry with the nonce it gave: it is not sent a third time.
        public static let dpopNonceLoop: Code = "dpop_nonce_loop"
        /// The provider answered a token request that carried a DPoP proof with
        /// a bearer token (`token_type` `Bearer`) and the configuration does not
        /// allow that (``DPoPSettings/allowsBearerDowngrade``). A refresh's new
        /// refresh token is kept all the same, and the bearer access token never used.
        public static let dpopDowngraded: Code = "dpop_downgraded"
        /// A resource server answered a bearer token with a challenge for
        /// DPoP only: the grant must be bound with DPoP (``OAuth2Configuration/dpop``).
        public static let dpopRequired: Code = "dpop_required"
        /// A token of `token_type` DPoP without the key it is bound to
        /// (``AccessToken/dpopKey``): it cannot be presented, and is never sent as a bearer token.
        public static let dpopKeyMissing: Code = "dpop_key_missing"
        /// A token bound to a client certificate (RFC 8705 §3) was about to
        /// go on a request presenting another certificate, or none, or not
        /// over `https`; nothing was sent.
        public static let certificateMismatch: Code = "certificate_mismatch"

        // Clients that configure themselves (RFC 9728, RFC 7591, RFC 8707, RFC 9470).
        /// A protected resource's metadata (RFC 9728) is not usable: not a JSON
        /// object, no `resource`, no `authorization_servers`, an authorization
        /// server that is not `https`, or one the discovery rules do not allow.
        public static let invalidResourceMetadata: Code = "invalid_resource_metadata"
        /// A protected resource's metadata names another resource than the URL
        /// asked for (RFC 9728 §3.3), or its `resource_metadata` is on another
        /// origin, or a token obtained for one resource was about to go to another.
        public static let resourceMismatch: Code = "resource_mismatch"
        /// A dynamic client registration's answer (RFC 7591 §3.2.1) is not
        /// usable: no `client_id`, not a JSON object, a field of the wrong type.
        public static let invalidRegistrationResponse: Code = "invalid_registration_response"
        /// None of the ways the app gave to identify the client works with
        /// this authorization server: no client ID metadata document support,
        /// no registration endpoint, and no pre-registered client id.
        public static let noClientIdentity: Code = "no_client_identity"
        /// The resource asks for a stronger or fresher authentication
        /// (RFC 9470 `insufficient_user_authentication`, with `acr_values` or `max_age`).
        public static let insufficientUserAuthentication: Code = "insufficient_user_authentication"
        /// The user must be sent through an authorization (a first sign-in or a
        /// step-up) and the app chose to do that itself: ``OAuth2Error/stepUp``
        /// says what to ask for.
        public static let authorizationRequired: Code = "authorization_required"

        // OpenID Connect and JOSE (JWS, JWK, JWT).
        /// A JWT that is not a well-formed compact JWS (RFC 7515 §7.1): its
        /// parts, base64url, JSON, a `crit` header, or over the size limit.
        public static let invalidJWT: Code = "invalid_jwt"
        /// A JWS algorithm that is not allowed: `none`, an HMAC where a public
        /// key is expected, or one outside the provider's or the app's allow-list.
        public static let unsupportedAlgorithm: Code = "unsupported_algorithm"
        /// A JWS signature that no key of the provider's set verifies.
        public static let invalidSignature: Code = "invalid_signature"
        /// No key of the provider's JWKS matches the JWS's `kid` and algorithm,
        /// even after fetching the set again (or that fetch was rate-limited).
        public static let unknownSigningKey: Code = "unknown_signing_key"
        /// The provider's JWKS document (`jwks_uri`) is not a usable key set.
        public static let invalidJWKS: Code = "invalid_jwks"
        /// An ID token whose claims are missing or of the wrong type, or a token
        /// response without the ID token an `openid` request must get.
        public static let invalidIDToken: Code = "invalid_id_token"
        /// The ID token's `aud` does not contain the client id, or `azp` is not the client.
        public static let audienceMismatch: Code = "audience_mismatch"
        /// The ID token's `exp` has passed (beyond the allowed clock leeway).
        public static let idTokenExpired: Code = "id_token_expired"
        /// The ID token's `nbf` or `iat` lies in the future (beyond the leeway).
        public static let idTokenNotYetValid: Code = "id_token_not_yet_valid"
        /// The ID token's `nonce` is missing or differs from the one sent.
        public static let nonceMismatch: Code = "nonce_mismatch"
        /// The ID token's `at_hash` does not match the access token.
        public static let accessTokenHashMismatch: Code = "at_hash_mismatch"
        /// A refreshed ID token, or a userinfo answer, is for another `sub` than the signed-in one.
        public static let subjectMismatch: Code = "subject_mismatch"

        // Provider quirks of ID tokens (issue 39: Microsoft Entra ID, Google).
        /// The ID token's `hd` (hosted domain) is missing or not one of
        /// ``OpenIDSettings/allowedHostedDomains``.
        public static let hostedDomainMismatch: Code = "hosted_domain_mismatch"

        // OpenID Provider Issuer Discovery by WebFinger (issue 39, OpenID Connect Discovery 1.0 §2, RFC 7033).
        /// A user identifier for issuer discovery (``OpenIDIssuer/webFinger(_:rules:transport:)``)
        /// that cannot be normalized (empty, too long, not visible ASCII, a
        /// scheme other than `acct`, `https` or `http`, no host), or whose
        /// host the discovery rules do not allow to be asked.
        public static let invalidIdentifier: Code = "invalid_identifier"
        /// A WebFinger answer (RFC 7033 §4.4) that is not a JSON object with
        /// `links`, names no OpenID Connect issuer, or names one that is not
        /// an `https` URL (loopback `http` from a loopback host) without user
        /// info, query or fragment, or that the discovery rules do not allow.
        public static let webFingerFailed: Code = "webfinger_failed"

        // Aggregated and distributed claims (issue 39, OpenID Connect Core §5.6.2).
        /// A claim source's JWT names an issuer the app does not trust
        /// (neither the OpenID provider nor one of ``OpenIDSettings/claimsProviders``).
        public static let untrustedClaimSource: Code = "untrusted_claim_source"
        /// A userinfo answer's `_claim_names` or `_claim_sources` is malformed,
        /// names a claim a source may not set (`sub`), or a source's verified JWT
        /// lacks a claim named for it or has expired.
        public static let invalidClaimSource: Code = "invalid_claim_source"

        // OpenID Connect Back-Channel Logout 1.0 (issue 39, back-channel logout).
        /// A back-channel logout request or its logout token is not one to act
        /// on (§2.6): no single `logout_token` in the POSTed form, a `typ` of
        /// another kind of token, a missing `jti`, `events` member, or `sub`
        /// and `sid`, a `nonce`, or an `exp` or `iat` outside the clock leeway.
        /// The token's signature, issuer and audience fail with the ID token's
        /// codes (`invalid_signature`, `issuer_mismatch`, `audience_mismatch`, …).
        public static let invalidLogoutToken: Code = "invalid_logout_token"
        /// A logout token whose `jti` this process accepted already from the
        /// same issuer, while that token was still valid (§2.6, step 10).
        public static let logoutTokenReplayed: Code = "logout_token_replayed"
    }

    /// The stable error code.
    public var code: Code
    /// A human-readable explanation, free of secrets.
    public var message: String
    /// The provider's `error_description`, control characters stripped, when it sent one.
    public var errorDescription: String?
    /// The provider's `error_uri`, when it sent an absolute `http` or `https`
    /// URI of RFC 6749's characters; any other is dropped.
    public var errorURI: String?
    /// The HTTP status of the answer that caused the error, when there was one.
    public var httpStatus: Int?
    /// How long the provider asked to wait (`Retry-After`, `slow_down`), when it said.
    public var retryAfter: Duration?
    /// What a resource asked for when it refused a token for want of scope or
    /// of a stronger authentication (`insufficient_scope`,
    /// `insufficient_user_authentication`, `authorization_required`): the app
    /// sends its user through an authorization that asks for it.
    public var stepUp: StepUpRequest?

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
        self.errorURI = errorURI.flatMap(ProviderText.errorURI)
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
    package static func sanitize(_ text: String) -> String {
        var scalars = String.UnicodeScalarView()
        for scalar in text.unicodeScalars.prefix(512)
        where !(scalar.properties.generalCategory == .control || scalar.properties.generalCategory == .format) {
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
