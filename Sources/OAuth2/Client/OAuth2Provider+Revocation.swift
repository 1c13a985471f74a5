import Logging
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension OAuth2Provider {
    /// Revokes a token at the provider (RFC 7009): the refresh token first
    /// (that ends the grant, RFC 7009 §2.1), then the access token. Deletes
    /// nothing: for an account's token, ``OAuth2Client/revoke()``.
    ///
    /// - Throws: ``OAuth2Error``: `invalid_configuration` without a revocation
    ///   endpoint; `provider_mismatch` for a token another provider or client
    ///   issued (nothing is sent); the provider's or the transport's error
    ///   (the first, when both revocations failed).
    public func revoke(_ token: AccessToken) async throws(OAuth2Error) {
        guard configuration.revocationEndpoint != nil else {
            throw OAuth2Error(code: .invalidConfiguration, message: "the configuration has no revocation endpoint")
        }
        try configuration.requireOwnBinding(of: token, consequence: "it is not sent")
        var firstError: OAuth2Error?
        let targets: [(Secret?, String)] = [(token.refreshToken, "refresh_token"), (token.accessToken, "access_token")]
        for case let (secret?, hint) in targets {
            do throws(OAuth2Error) {
                try await revoke(secret, tokenTypeHint: hint, dpopKey: token.dpopKey)
            } catch {
                logger.debug("revocation failed", metadata: ["oauth2.error": "\(error.code)", "oauth2.token_type_hint": "\(hint)"])
                firstError = firstError ?? error
            }
        }
        if let firstError { throw firstError }
    }

    /// A bound token's revocation carries a proof of its key, for providers
    /// that want one; others ignore it.
    private func revoke(_ token: Secret, tokenTypeHint: String, dpopKey: DPoPKey?) async throws(OAuth2Error) {
        let configuration = configuration
        let (response, _) = try await performProvingPossession(of: dpopKey) { (now) throws(OAuth2Error) in
            try TokenRequestBuilder.revocationRequest(token: token, tokenTypeHint: tokenTypeHint, configuration: configuration, now: now)
        }
        if (200..<300).contains(response.status.code) { return }
        if (300..<400).contains(response.status.code) {
            throw OAuth2Error(
                code: .unexpectedRedirect, message: "the revocation endpoint answered with a redirect", httpStatus: response.status.code)
        }
        if response.status.code == 429 {
            throw ProviderResponse.rateLimited(response, by: "the revocation endpoint", now: clock.now())
        }
        var error =
            TokenResponseParser.providerError(from: response)
            ?? OAuth2Error(
                code: .httpError, message: "the revocation endpoint answered HTTP \(response.status.code)", httpStatus: response.status.code
            )
        // RFC 7009 §2.2.1: a 503 may say when to try again.
        if response.status.code == 503,
            let delay = response.headers[.retryAfter].flatMap({ ProviderResponse.retryAfter($0, now: clock.now()) })
        {
            error.retryAfter = delay
            error.message += "; retry after \(delay.secondsDescription)"
        }
        throw error
    }
}
