import Logging
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension OAuth2Provider {
    /// Sends a request to one of the provider's endpoints (token,
    /// revocation), with a fresh DPoP proof made with `key` when there is
    /// one, and retries once with the server's nonce when it asks for one
    /// (``DPoPNonceRetry``).
    ///
    /// Every proof is new (`jti`, `iat`): the request is made again for the
    /// retry by `makeRequest`, so that a client assertion is new too. The
    /// proof's `htu` is the endpoint as sent, its `nonce` the one the endpoint's
    /// origin last gave (``dpopNonces``). Every `DPoP-Nonce` header of an
    /// answer updates that, with a key or without.
    ///
    /// - Returns: the answer that stands, and when its request was made.
    /// - Throws: what `makeRequest` or the transport throws; `dpop_nonce_loop`
    ///   when the server asks for a nonce again after the retry.
    func performProvingPossession(
        of key: DPoPKey?,
        _ makeRequest: (Date) throws(OAuth2Error) -> HTTPTransportRequest
    ) async throws(OAuth2Error) -> (response: HTTPTransportResponse, requestedAt: Date) {
        var policy = DPoPNonceRetry()
        while true {
            let requestedAt = clock.now()
            var request = try makeRequest(requestedAt)
            if let key {
                let url = request.url.absoluteString
                let proof = try key.proof(method: request.method.rawValue, url: url, nonce: dpopNonces.nonce(for: url), now: requestedAt)
                request.headers[DPoPFields.proof] = proof.value
            }
            let response = try await perform(request)
            let nonce = response.headers[DPoPFields.nonce]
            // The URL's text only when there is a nonce to keep: a bearer token
            // request pays nothing for DPoP (the allocation gate's refresh).
            if let nonce { dpopNonces.update(nonce, for: request.url.absoluteString) }
            guard key != nil else { return (response, requestedAt) }
            switch policy.event(.answered(refusesForNonce: Self.refusesForNonce(response), nonce: nonce)) {
            case .accept:
                return (response, requestedAt)
            case .retry:
                logger.debug(
                    "the server asked for a DPoP nonce; sending again with it", metadata: ["http.status": "\(response.status.code)"])
            case .fail(let error):
                throw error
            }
        }
    }

    /// Whether an endpoint's answer is RFC 9449 §8's `use_dpop_nonce` (a 400
    /// from an authorization server; a 401 is accepted too).
    static func refusesForNonce(_ response: HTTPTransportResponse) -> Bool {
        guard response.status.code == 400 || response.status.code == 401 else { return false }
        return TokenResponseParser.providerError(from: response)?.code.rawValue == DPoPFields.useNonceError
    }
}
