#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A grant the client exchanges at the token endpoint.
enum Grant: Sendable {
    /// The authorization code grant (RFC 6749 §4.1.3), with the PKCE verifier (RFC 7636 §4.5).
    case authorizationCode(code: Secret, redirectURI: URL, codeVerifier: Secret?)
    /// The resource owner password grant (RFC 6749 §4.3); deprecated, opt-in.
    case password(username: String, password: Secret, scopes: [String])
    /// The client credentials grant (RFC 6749 §4.4).
    case clientCredentials(scopes: [String])
    /// A refresh (RFC 6749 §6); empty scopes ask for the original ones.
    case refreshToken(Secret, scopes: [String])
    /// An assertion grant (RFC 7521 §4.1): `grant_type=<type>`, `assertion=…`.
    case assertion(type: String, assertion: Secret, scopes: [String])
    /// The device access token request (RFC 8628 §3.4).
    case deviceCode(Secret)
}

/// Builds the form-encoded POSTs of the token, revocation and device
/// authorization endpoints (DESIGN.md §5).
///
/// Every request is `POST` with `Content-Type: application/x-www-form-urlencoded`
/// and `Accept: application/json`, never follows redirects (a 307 would replay
/// the client secret to another host), and carries the configuration's
/// timeout and response size limit. The client authenticates as
/// `configuration.clientAuthentication` says; a JWT method signs a fresh
/// assertion (RFC 7523 §3) for every request.
enum TokenRequestBuilder {
    static let deviceCodeGrantType = "urn:ietf:params:oauth:grant-type:device_code"
    static let clientAssertionType = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"

    /// The token request for a grant: the grant's parameters, then the
    /// configuration's `resource`s (RFC 8707), `audience` and additional
    /// token parameters, then the client's authentication.
    ///
    /// - Throws: `invalid_configuration` when a client assertion cannot be signed.
    static func tokenRequest(for grant: Grant, configuration: OAuth2Configuration, now: Date = Date()) throws(OAuth2Error)
        -> HTTPTransportRequest
    {
        var parameters: [(String, String)]
        switch grant {
        case .authorizationCode(let code, let redirectURI, let codeVerifier):
            parameters = [
                ("grant_type", "authorization_code"),
                ("code", code.value),
                ("redirect_uri", redirectURI.absoluteString),
            ]
            if let codeVerifier {
                parameters.append(("code_verifier", codeVerifier.value))
            }
        case .password(let username, let password, let scopes):
            parameters = [("grant_type", "password"), ("username", username), ("password", password.value)]
            appendScope(scopes, to: &parameters)
        case .clientCredentials(let scopes):
            parameters = [("grant_type", "client_credentials")]
            appendScope(scopes, to: &parameters)
        case .refreshToken(let refreshToken, let scopes):
            parameters = [("grant_type", "refresh_token"), ("refresh_token", refreshToken.value)]
            appendScope(scopes, to: &parameters)
        case .assertion(let type, let assertion, let scopes):
            parameters = [("grant_type", type), ("assertion", assertion.value)]
            appendScope(scopes, to: &parameters)
        case .deviceCode(let deviceCode):
            parameters = [("grant_type", deviceCodeGrantType), ("device_code", deviceCode.value)]
        }
        parameters.append(contentsOf: configuration.targetParameters)
        parameters.append(contentsOf: configuration.additionalTokenParameters)
        return try request(to: configuration.tokenEndpoint, parameters: parameters, configuration: configuration, now: now)
    }

    /// The RFC 7009 revocation request for a token.
    ///
    /// - Throws: `invalid_configuration` when no revocation endpoint is configured.
    static func revocationRequest(
        token: Secret,
        tokenTypeHint: String?,
        configuration: OAuth2Configuration,
        now: Date = Date()
    ) throws(OAuth2Error) -> HTTPTransportRequest {
        guard let endpoint = configuration.revocationEndpoint else {
            throw OAuth2Error(code: .invalidConfiguration, message: "no revocation endpoint is configured")
        }
        var parameters = [("token", token.value)]
        if let tokenTypeHint {
            parameters.append(("token_type_hint", tokenTypeHint))
        }
        return try request(to: endpoint, parameters: parameters, configuration: configuration, now: now)
    }

    /// The RFC 8628 §3.1 device authorization request.
    ///
    /// - Throws: `invalid_configuration` when no device authorization endpoint is configured.
    static func deviceAuthorizationRequest(
        scopes: [String],
        configuration: OAuth2Configuration,
        now: Date = Date()
    ) throws(OAuth2Error) -> HTTPTransportRequest {
        guard let endpoint = configuration.deviceAuthorizationEndpoint else {
            throw OAuth2Error(code: .invalidConfiguration, message: "no device authorization endpoint is configured")
        }
        var parameters: [(String, String)] = []
        appendScope(scopes, to: &parameters)
        parameters.append(contentsOf: configuration.targetParameters)
        return try request(to: endpoint, parameters: parameters, configuration: configuration, now: now)
    }

    /// The `Authorization` value of `client_secret_basic`: `Basic ` and the
    /// base64 of the form-encoded id, `:`, and the form-encoded secret (RFC 6749 §2.3.1).
    static func basicAuthorization(clientID: String, secret: Secret) -> String {
        let credentials = FormURLEncoding.encodeComponent(clientID) + ":" + FormURLEncoding.encodeComponent(secret.value)
        return "Basic " + Data(credentials.utf8).base64EncodedString()
    }

    /// The key a JWT client authentication signs with: the configured private
    /// key for `private_key_jwt`, the client secret as an HMAC key for
    /// `client_secret_jwt`; `nil` for the other methods.
    private static func clientAssertionKey(of configuration: OAuth2Configuration, secret: Secret?) throws(OAuth2Error) -> JWTSigningKey? {
        switch configuration.clientAuthentication {
        case .privateKeyJWT:
            guard let key = configuration.clientAssertionKey else {
                throw OAuth2Error(code: .invalidConfiguration, message: "private_key_jwt needs the configuration's clientAssertionKey")
            }
            return key
        case .clientSecretJWT:
            guard let secret else {
                throw OAuth2Error(code: .invalidConfiguration, message: "client_secret_jwt needs the client secret")
            }
            return try JWTSigningKey.hmac(secret)
        default:
            return nil
        }
    }

    private static func appendScope(_ scopes: [String], to parameters: inout [(String, String)]) {
        if !scopes.isEmpty {
            parameters.append(("scope", scopes.joined(separator: " ")))
        }
    }

    /// The POST with the client's authentication added to the header or the body.
    ///
    /// `client_id` is added to the body where the method sends it, unless
    /// `parameters` has it already (a pushed authorization request carries it
    /// among its own, RFC 9126 §2.1). A client assertion's `aud` is the
    /// configuration's ``OAuth2Configuration/clientAssertionAudience``, else
    /// `assertionAudience`, else the token endpoint.
    static func request(
        to endpoint: URL,
        parameters: [(String, String)],
        configuration: OAuth2Configuration,
        now: Date,
        assertionAudience: URL? = nil
    ) throws(OAuth2Error) -> HTTPTransportRequest {
        var headers: HTTPFields = [
            .contentType: "application/x-www-form-urlencoded",
            .accept: "application/json",
        ]
        var body = parameters
        let hasClientID = parameters.contains { $0.0 == "client_id" }
        func appendClientID() {
            if !hasClientID { body.append(("client_id", configuration.clientID)) }
        }
        let secret = try configuration.currentClientSecret(at: now)
        if configuration.clientAuthentication == .clientSecretBasic, let secret {
            headers.append(HTTPField(name: .authorization, value: basicAuthorization(clientID: configuration.clientID, secret: secret)))
        } else if configuration.clientAuthentication == .clientSecretPost, let secret {
            appendClientID()
            body.append(("client_secret", secret.value))
        } else if let key = try clientAssertionKey(of: configuration, secret: secret) {
            // RFC 7523 §2.2: client_id is optional beside the assertion; sent, as most providers expect it.
            let assertion = try JWTAssertion.make(
                issuer: configuration.clientID,
                subject: configuration.clientID,
                audience: configuration.clientAssertionAudience ?? (assertionAudience ?? configuration.tokenEndpoint).absoluteString,
                key: key,
                now: now
            )
            appendClientID()
            body.append(("client_assertion_type", clientAssertionType))
            body.append(("client_assertion", assertion.value))
        } else {
            // A public client (or one whose secret is missing, which validate() refuses)
            // identifies itself without authenticating (RFC 6749 §4.1.3, RFC 8628 §3.1).
            appendClientID()
        }
        var request = HTTPTransportRequest(
            method: .post,
            url: endpoint,
            headers: headers,
            body: Data(FormURLEncoding.encode(body).utf8),
            timeout: configuration.requestTimeout,
            redirects: .never,
            maxResponseSize: configuration.maxResponseSize
        )
        // Mutual TLS (RFC 8705): the client authenticates in the handshake
        // (tls_client_auth), and the tokens are bound to the certificate.
        request.clientCertificate = configuration.clientCertificate
        return request
    }
}
