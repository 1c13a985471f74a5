import Logging
#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

extension OAuth2Client: TokenSource {
    /// Sends a request signed with `Authorization: Bearer`, as NXOAuth2Connection did,
    /// or with `Authorization: DPoP` and a proof for a DPoP-bound token.
    ///
    /// A ``SigningTransport`` over the provider's transport with this client
    /// as its ``TokenSource``: refreshes first when the token expires within
    /// the configuration's skew; on a 401 with `invalid_token` (or without a
    /// challenge) from the hop that carried the token, refreshes once and
    /// retries once; a second 401 means the token is lost (deleted, "did
    /// lose"). A 403 naming `insufficient_scope` is an error and is not
    /// refreshed. Any other response, error statuses included, is returned.
    /// A DPoP-bound token gets a proof per request and per hop, with the
    /// nonce the provider's cache holds for the hop's origin (see ``SigningTransport``).
    ///
    /// - Throws: ``OAuth2Error``: `insecure_endpoint` for an `http` URL that
    ///   is not loopback; `not_authenticated`; `reauthorization_required`;
    ///   `invalid_token` / `unauthorized` after the retry; `insufficient_scope`;
    ///   `insecure_redirect`; `dpop_required`, `dpop_nonce_loop`, `dpop_key_missing`;
    ///   `timeout`, `tls_error`, `transport_error`.
    public func send(_ request: HTTPTransportRequest) async throws(OAuth2Error) -> HTTPTransportResponse {
        try await SigningTransport(
            wrapping: provider.transport, tokenSource: self, telemetry: provider.telemetry, readyToken: tokenReadyNow(),
            dpopNonces: provider.dpopNonces
        ).send(request)
    }

    /// Sends a swift-http-types request signed with the account's token, as
    /// ``send(_:)`` does, and returns the response head and body: the
    /// shape of `URLSession`'s and Hummingbird's HTTP types, for apps that
    /// speak them.
    ///
    /// - Throws: ``OAuth2Error``: `transport_error` when `request` has no
    ///   absolute `http` or `https` URL (scheme, authority, path); otherwise
    ///   as ``send(_:)``.
    public func send(_ request: HTTPRequest, body: Data? = nil) async throws(OAuth2Error) -> (HTTPResponse, Data) {
        let transportRequest: HTTPTransportRequest
        do throws(HTTPTransportError) {
            transportRequest = try HTTPTransportRequest(request, body: body)
        } catch {
            throw OAuth2Error(transportError: error)
        }
        let response = try await send(transportRequest)
        return (response.head, response.body)
    }

    /// ``TokenSource``: the configuration's client certificate (mutual TLS),
    /// which ``send(_:)`` and a ``SigningTransport`` over this client present.
    public var clientCertificate: ClientCertificate? {
        provider.configuration.clientCertificate
    }

    /// ``TokenSource``: a token the resource server rejected was presented;
    /// refreshes (or renews) once, unless another caller already replaced it.
    public func token(replacing rejected: AccessToken) async throws(OAuth2Error) -> AccessToken {
        logger.debug("resource server rejected the token; refreshing once")
        return try await refresh(failedToken: rejected.accessToken, force: true, automatic: true)
    }

    /// ``TokenSource``: the refreshed token was rejected too; it is deleted
    /// (unless another client replaced it meanwhile) and the delegate hears
    /// "did lose" with `error`.
    public func tokenRejectedAfterRefresh(_ token: AccessToken, error: OAuth2Error) async {
        try? await deleteIfUnchanged(token)
        notify(machine.withLock { $0.tokenLost(error) })
    }
}

extension OAuth2Client: DPoPNonceSharing {
    /// The provider's nonces: a ``SigningTransport`` made over this client
    /// shares them with the token endpoint and the provider's other clients.
    package var dpopNonces: DPoPNonceCache { provider.dpopNonces }
}
