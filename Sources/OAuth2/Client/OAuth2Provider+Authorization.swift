import Logging
#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

extension OAuth2Provider {
    /// Starts the user-agent (authorization code) flow: the URL to send the
    /// user to, with `response_type=code`, a fresh `state` (256 bits) and a
    /// PKCE S256 challenge; with ``OAuth2Configuration/dpop``, a new key for
    /// the grant, named by `dpop_jkt` and kept in the returned value.
    ///
    /// When the configuration signs request objects (``OAuth2Configuration/signsRequestObject``,
    /// or the provider requires them), the parameters travel as a JWT signed
    /// with the client's assertion key (RFC 9101). When the request is pushed
    /// (``OAuth2Configuration/pushedAuthorization``: whenever the provider
    /// requires it, by default), they are first POSTed, with the client's
    /// authentication, to the pushed authorization request endpoint (RFC 9126),
    /// and the URL carries only `client_id` and `request_uri`; it is then valid
    /// until ``PendingAuthorization/pushedRequestExpiresAt``. With DPoP, the
    /// push carries a proof of the grant's key besides `dpop_jkt`.
    ///
    /// Keep the returned value (it is `Codable`) in the user's session and
    /// pass it with the redirect to ``token(for:)`` (``OAuth2Grant/authorizationCode(redirect:pending:)-(String,_)``)
    /// on the callback, on this instance or another.
    ///
    /// - Parameters:
    ///   - redirectURI: where the provider sends the user back; registered with the provider.
    ///   - scopes: the scopes to ask for; the configuration's defaults when `nil`.
    ///   - additionalParameters: more query parameters (`prompt`, `login_hint`, …); none may
    ///     replace one the flow sets.
    /// - Throws: ``OAuth2Error`` `invalid_configuration` when there is no
    ///   authorization endpoint, a parameter would override the flow's own,
    ///   or a request object cannot be signed; for a pushed request, the
    ///   provider's error (`invalid_request`, `invalid_client`, …),
    ///   `invalid_pushed_authorization_response`, and the transport's errors.
    public func authorizationURL(
        redirectURI: URL,
        scopes: [String]? = nil,
        additionalParameters: [(String, String)] = []
    ) async throws(OAuth2Error) -> PendingAuthorization {
        let now = clock.now()
        let request = try prepareAuthorization(
            redirectURI: redirectURI, scopes: scopes, additionalParameters: additionalParameters, now: now)
        var parameters = request.parameters
        if configuration.signsRequestObject || configuration.requiresSignedRequestObject {
            let object = try RequestObject.sign(parameters: parameters, configuration: configuration, now: now)
            // RFC 9101 §5: client_id beside the request, the rest only inside it.
            parameters = [("client_id", configuration.clientID), ("request", object.value)]
        }
        let pending: PendingAuthorization
        if configuration.pushedAuthorization.pushes(whenRequired: configuration.requiresPushedAuthorizationRequests) {
            let answer = try await push(parameters, dpopKey: request.dpopKey)
            pending = try request.pending(
                sending: [("client_id", configuration.clientID), ("request_uri", answer.requestURI)],
                pushedRequestExpiresAt: answer.expiresAt
            )
        } else {
            pending = try request.pending(sending: parameters)
        }
        logger.debug("authorization started", metadata: ["oauth2.redirect_uri": "\(redirectURI.redactingQuery)"])
        return pending
    }

    /// Starts the user-agent (authorization code) flow with the request
    /// object passed by reference from a URL the app hosts (RFC 9101 §5.2,
    /// OpenID Connect Core §6.2): the parameters of
    /// ``authorizationURL(redirectURI:scopes:additionalParameters:)`` (`state`,
    /// PKCE, `nonce`, DPoP's `dpop_jkt`) signed as a request object with the
    /// configuration's ``OAuth2Configuration/clientAssertionKey``, as that
    /// method signs one by value, and an unguessable URL under `baseURL` for
    /// the app to serve it at.
    ///
    /// The browser's URL carries `response_type`, `client_id`, `request_uri`
    /// and `scope`: RFC 9101 §5 needs only `client_id` and `request_uri`,
    /// and OpenID Connect Core §6.2 wants the other two as well (their values
    /// are the object's). Serve ``HostedRequestObject/jwt`` at
    /// ``HostedRequestObject/url`` before you send the user to
    /// ``PendingAuthorization/url``; finish on the callback exactly as with
    /// the other method (the redirect is checked the same way).
    ///
    /// Nothing is sent: the provider fetches the object when the user
    /// arrives. The library never makes an unsigned request object (it would
    /// add a fetch and protect nothing), so this needs a key even where the
    /// provider would take `alg: none`.
    ///
    /// - Parameters:
    ///   - redirectURI: where the provider sends the user back; registered with the provider.
    ///   - scopes: the scopes to ask for; the configuration's defaults when `nil`.
    ///   - additionalParameters: more authorization parameters, signed into the object; none
    ///     may replace one the flow sets.
    ///   - baseURL: where the app serves request objects: `https` (`http` only to a loopback
    ///     host), no query or fragment; each object's URL is this, then a random path segment.
    /// - Returns: the pending authorization to keep in the user's session, and the request
    ///   object to serve.
    /// - Throws: ``OAuth2Error`` `insecure_endpoint` for an `http` base URL to another host;
    ///   `invalid_configuration` for another bad base URL, without a ``OAuth2Configuration/clientAssertionKey``
    ///   or an ``OAuth2Configuration/issuer`` (the object's `aud`), when the configuration
    ///   pushes requests (a pushed request is already passed by reference, RFC 9126), when the
    ///   provider's metadata says it takes no `request_uri` (``OAuth2Configuration/requestURIParameterSupported``), and
    ///   as ``authorizationURL(redirectURI:scopes:additionalParameters:)`` for the parameters.
    public func authorizationURL(
        redirectURI: URL,
        scopes: [String]? = nil,
        additionalParameters: [(String, String)] = [],
        hostingRequestObjectUnder baseURL: URL
    ) throws(OAuth2Error) -> (pending: PendingAuthorization, requestObject: HostedRequestObject) {
        guard !configuration.pushedAuthorization.pushes(whenRequired: configuration.requiresPushedAuthorizationRequests) else {
            throw OAuth2Error(
                code: .invalidConfiguration,
                message:
                    "the configuration pushes authorization requests (RFC 9126), which pass them by reference already; a request object the client hosts is for a provider that does not take pushed requests"
            )
        }
        guard configuration.requestURIParameterSupported else {
            throw OAuth2Error(
                code: .invalidConfiguration,
                message:
                    "the provider's metadata says it does not fetch request objects by reference (request_uri_parameter_supported is false): send the request object by value instead"
            )
        }
        let id = HostedRequestObject.makeID()
        let url = try HostedRequestObject.url(under: baseURL, id: id)
        let now = clock.now()
        let request = try prepareAuthorization(
            redirectURI: redirectURI, scopes: scopes, additionalParameters: additionalParameters, now: now)
        let object = try RequestObject.sign(parameters: request.parameters, configuration: configuration, now: now)
        var query: [(String, String)] = [
            ("response_type", "code"), ("client_id", configuration.clientID), ("request_uri", url.absoluteString),
        ]
        if !request.scopes.isEmpty { query.append(("scope", request.scopes.joined(separator: " "))) }
        let pending = try request.pending(sending: query)
        logger.debug(
            "authorization started, request object by reference", metadata: ["oauth2.redirect_uri": "\(redirectURI.redactingQuery)"])
        return (pending, HostedRequestObject(id: id, url: url, jwt: object.value, expiresAt: RequestObject.expiresAt(signedAt: now)))
    }

    /// The flow's parameters, state, nonce, PKCE and DPoP key, whichever way
    /// they then travel (query, request object by value or by reference, pushed).
    private func prepareAuthorization(
        redirectURI: URL, scopes: [String]?, additionalParameters: [(String, String)], now: Date
    ) throws(OAuth2Error) -> AuthorizationRequest {
        try AuthorizationRequestBuilder.prepare(
            configuration: configuration,
            redirectURI: redirectURI,
            scopes: scopes ?? configuration.defaultScopes,
            additionalParameters: additionalParameters,
            now: now,
            dpopKey: try configuration.newDPoPKey()
        )
    }

    /// POSTs the authorization parameters to the pushed authorization request endpoint (RFC 9126 §2),
    /// with a proof of the grant's DPoP key when it has one (RFC 9449 §10.1), retried once with the
    /// server's nonce when it asks for one.
    private func push(_ parameters: [(String, String)], dpopKey: DPoPKey?) async throws(OAuth2Error)
        -> PushedAuthorizationRequest.Answer
    {
        let configuration = configuration
        let (response, requestedAt) = try await performProvingPossession(of: dpopKey) { (now) throws(OAuth2Error) in
            try PushedAuthorizationRequest.request(parameters: parameters, configuration: configuration, now: now)
        }
        let answer = try PushedAuthorizationRequest.parse(response, requestedAt: requestedAt, maxBodySize: configuration.maxResponseSize)
        logger.debug("authorization request pushed", metadata: ["oauth2.expires_at": "\(answer.expiresAt.timeIntervalSince1970)"])
        return answer
    }
}
