#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Builds the authorization request of the authorization code flow
/// (RFC 6749 §4.1.1) with a fresh `state` and PKCE `S256` (RFC 7636 §4.3).
enum AuthorizationRequestBuilder {
    /// The parameters this builder sets; an additional parameter may not repeat one.
    static let reservedParameters: Set<String> = [
        "response_type", "client_id", "redirect_uri", "scope", "state", "code_challenge", "code_challenge_method",
        "dpop_jkt",
    ]

    /// Makes a pending authorization whose `url` is the authorize endpoint
    /// (its own query kept) followed by `response_type=code`, `client_id`,
    /// `redirect_uri`, `scope` (space-joined, left out when empty), `state`,
    /// `code_challenge`, `code_challenge_method=S256`, the configuration's
    /// `response_mode` when it has one, a fresh `nonce` (256
    /// bits) when the configuration has OpenID Connect and the scopes include
    /// `openid`, `dpop_jkt` (RFC 9449 §10) when there is a `dpopKey`, the
    /// configuration's `resource`s (RFC 8707) and `audience`, and then
    /// `additionalParameters`, in that order.
    ///
    /// Names and values are percent-encoded as form components with a space
    /// as `%20`, which both form parsers and RFC 3986 query parsers read back
    /// as a space.
    ///
    /// - Throws: `invalid_configuration` when there is no authorization
    ///   endpoint, the endpoint has a fragment, the provider's metadata lists
    ///   PKCE methods without `S256`, the redirect URI is not
    ///   absolute or has a fragment (RFC 6749 §3.1.2), a scope is not an
    ///   RFC 6749 §3.3 scope token, or an additional parameter is empty,
    ///   repeated, or would set a parameter this builder or the endpoint's
    ///   query already sets.
    static func make(
        configuration: OAuth2Configuration,
        redirectURI: URL,
        scopes: [String],
        additionalParameters: [(String, String)],
        now: Date,
        dpopKey: DPoPKey? = nil
    ) throws(OAuth2Error) -> PendingAuthorization {
        let request = try prepare(
            configuration: configuration, redirectURI: redirectURI, scopes: scopes,
            additionalParameters: additionalParameters, now: now, dpopKey: dpopKey)
        return try request.pending(sending: request.parameters)
    }

    /// The request of ``make(configuration:redirectURI:scopes:additionalParameters:now:)``
    /// before it is sent: its parameters, and what the redirect must match. A
    /// pushed (RFC 9126) or signed (RFC 9101) request sends other parameters
    /// in the browser's URL than these.
    ///
    /// - Throws: as ``make(configuration:redirectURI:scopes:additionalParameters:now:)``.
    static func prepare(
        configuration: OAuth2Configuration,
        redirectURI: URL,
        scopes: [String],
        additionalParameters: [(String, String)],
        now: Date,
        dpopKey: DPoPKey? = nil
    ) throws(OAuth2Error) -> AuthorizationRequest {
        guard let endpoint = configuration.authorizationEndpoint else {
            throw invalidConfiguration("no authorization endpoint is configured")
        }
        let endpointText = endpoint.absoluteString
        guard let endpointParts = URLParts(endpointText[...]), endpointParts.isHTTP,
            !(endpointParts.host ?? "").isEmpty
        else {
            throw invalidConfiguration("the authorization endpoint is not an absolute http(s) URL")
        }
        guard endpointParts.fragment == nil else {
            throw invalidConfiguration("the authorization endpoint has a fragment (RFC 6749 §3.1)")
        }
        let methods = configuration.codeChallengeMethodsSupported
        guard methods.isEmpty || methods.contains(PKCE.method) else {
            throw invalidConfiguration(
                "the provider's metadata lists PKCE methods (code_challenge_methods_supported) without S256; this client never uses plain (RFC 9700 §2.1.1)"
            )
        }
        try checkRedirectURI(redirectURI)
        for scope in scopes where !isScopeToken(scope) {
            throw invalidConfiguration("a scope is empty or has characters RFC 6749 §3.3 does not allow")
        }

        let nonce: Secret? =
            configuration.openID != nil && scopes.contains("openid")
            ? Secret.opaque(StateGenerator.makeState())
            : nil
        var taken = reservedParameters
        if nonce != nil { taken.insert("nonce") }
        if configuration.responseMode != nil { taken.insert("response_mode") }
        if !configuration.resources.isEmpty { taken.insert("resource") }
        if configuration.audience != nil { taken.insert("audience") }
        if let query = endpointParts.query {
            let existing: [(String, String)]
            do throws(FormURLEncoding.Failure) {
                existing = try FormURLEncoding.decode(query)
            } catch {
                throw invalidConfiguration("the authorization endpoint's query is malformed: \(error.reason)")
            }
            for (name, _) in existing {
                guard taken.insert(name).inserted else {
                    throw invalidConfiguration("the authorization endpoint's query already sets \(name)")
                }
            }
        }
        for (name, _) in additionalParameters {
            guard !name.isEmpty else {
                throw invalidConfiguration("an additional authorization parameter has an empty name")
            }
            guard taken.insert(name).inserted else {
                throw invalidConfiguration(
                    "the additional authorization parameter \(name) is set twice or would override one the client sets")
            }
        }

        let state = StateGenerator.makeState()
        let verifier = PKCE.makeVerifier()
        var parameters: [(String, String)] = [
            ("response_type", "code"),
            ("client_id", configuration.clientID),
            ("redirect_uri", redirectURI.absoluteString),
        ]
        if !scopes.isEmpty {
            parameters.append(("scope", scopes.joined(separator: " ")))
        }
        parameters.append(("state", state))
        parameters.append(("code_challenge", PKCE.challenge(for: verifier)))
        parameters.append(("code_challenge_method", PKCE.method))
        if let responseMode = configuration.responseMode { parameters.append(("response_mode", responseMode.rawValue)) }
        if let nonce { parameters.append(("nonce", nonce.value)) }
        if let dpopKey { parameters.append(("dpop_jkt", dpopKey.thumbprint)) }
        parameters.append(contentsOf: configuration.targetParameters)
        parameters.append(contentsOf: additionalParameters)

        return AuthorizationRequest(
            endpoint: endpointText,
            endpointQuery: endpointParts.query,
            parameters: parameters,
            state: state,
            codeVerifier: verifier,
            redirectURI: redirectURI,
            scopes: scopes,
            expectedIssuer: configuration.issuer,
            requiresIssuer: configuration.requiresIssuerInRedirect,
            createdAt: now,
            nonce: nonce,
            dpopKey: dpopKey
        )
    }

    /// Requires an absolute redirect URI without a fragment; an `http(s)` one needs a host.
    static func checkRedirectURI(_ redirectURI: URL) throws(OAuth2Error) {
        guard let parts = URLParts(redirectURI.absoluteString[...]) else {
            throw invalidConfiguration("the redirect URI is not an absolute URI")
        }
        if parts.isHTTP {
            guard let host = parts.host, !host.isEmpty else {
                throw invalidConfiguration("the redirect URI has no host")
            }
        }
        guard parts.fragment == nil else {
            throw invalidConfiguration("the redirect URI has a fragment (RFC 6749 §3.1.2)")
        }
    }

    /// Whether `scope` is a scope-token: `1*( %x21 / %x23-5B / %x5D-7E )` (RFC 6749 §3.3).
    static func isScopeToken(_ scope: String) -> Bool {
        !scope.isEmpty
            && scope.utf8.allSatisfy { byte in
                byte == 0x21 || (0x23...0x5B).contains(byte) || (0x5D...0x7E).contains(byte)
            }
    }

    static func invalidConfiguration(_ message: String) -> OAuth2Error {
        OAuth2Error(code: .invalidConfiguration, message: message)
    }
}

/// An authorization request made and not yet sent: the endpoint, the
/// parameters, and what the redirect must match.
struct AuthorizationRequest: Sendable {
    /// The authorization endpoint, with its own query.
    let endpoint: String
    /// The endpoint's own query, kept before the request's parameters.
    let endpointQuery: Substring?
    /// The authorization parameters, in the order they are sent.
    let parameters: [(String, String)]
    let state: String
    let codeVerifier: Secret
    let redirectURI: URL
    let scopes: [String]
    let expectedIssuer: String?
    let requiresIssuer: Bool
    let createdAt: Date
    let nonce: Secret?
    let dpopKey: DPoPKey?

    /// The pending authorization whose URL is the endpoint with `query`
    /// appended: all the parameters, or what stands for them (`client_id`
    /// with `request_uri` or `request`).
    ///
    /// - Throws: `invalid_configuration` when the URL cannot be built.
    func pending(sending query: [(String, String)], pushedRequestExpiresAt: Date? = nil) throws(OAuth2Error) -> PendingAuthorization {
        let text = FormURLEncoding.appendingQuery(query, to: endpoint, existingQuery: endpointQuery)
        guard let url = URL(string: text) else {
            throw AuthorizationRequestBuilder.invalidConfiguration("the authorization URL could not be built")
        }
        return PendingAuthorization(
            url: url,
            state: state,
            codeVerifier: codeVerifier,
            redirectURI: redirectURI,
            scopes: scopes,
            expectedIssuer: expectedIssuer,
            requiresIssuer: requiresIssuer,
            createdAt: createdAt,
            nonce: nonce,
            pushedRequestExpiresAt: pushedRequestExpiresAt,
            dpopKey: dpopKey
        )
    }
}
