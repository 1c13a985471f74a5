import Logging
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension OAuth2Provider {
    /// Verifies the token response's ID token as `expectation` says and keeps
    /// its claims in the token (``AccessToken/idToken``); nothing when OpenID
    /// Connect is not configured, or no ID token came where none is required.
    ///
    /// A refresh's ID token never makes this throw: the provider has rotated
    /// the refresh token in the same response, and a token the provider
    /// issued is never dropped. One that cannot be verified now, or is
    /// refused, is moved out of ``AccessToken/extraFields`` into
    /// ``AccessToken/unverifiedIDToken``; the refresh decides what that means.
    func verifyIDToken(of token: inout AccessToken, expectation: IDTokenVerifier.Expectation) async throws(OAuth2Error) {
        guard let verifier = idTokenVerifier, let keySet else { return }
        guard let value = token.extraFields["id_token"] else {
            if case .signIn(.some) = expectation {
                throw OAuth2Error(
                    code: .invalidIDToken,
                    message: "the token response has no id_token, though the authorization request asked for openid"
                )
            }
            return
        }
        let now = clock.now()
        guard case .refresh(let previous) = expectation else {
            guard let raw = value.stringValue else {
                throw OAuth2Error(code: .invalidIDToken, message: "the token response's id_token is not a string")
            }
            token.idToken = try await verifier.verify(raw, expectation: expectation, accessToken: token.accessToken, keys: keySet, now: now)
            return
        }
        let raw = value.stringValue ?? ""
        let outcome: IDTokenVerifier.RefreshedIDToken =
            value.stringValue == nil
            ? .unverified(OAuth2Error(code: .invalidIDToken, message: "the token response's id_token is not a string"), refused: true)
            : await verifier.verifyRefreshed(raw, previous: previous, accessToken: token.accessToken, keys: keySet, now: now)
        switch outcome {
        case .verified(let claims):
            token.idToken = claims
        case .unverified(let error, let refused):
            logger.debug(
                refused ? "refreshed ID token refused" : "refreshed ID token not verifiable now; verification deferred",
                metadata: ["oauth2.error": "\(error.code)"])
            token.unverifiedIDToken = UnverifiedIDToken(rawValue: .opaque(raw), reason: error.code, isRefused: refused, receivedAt: now)
            token.extraFields["id_token"] = nil
            token.idToken = nil
        }
    }

    /// Verifies again an ID token whose verification a refresh deferred,
    /// against the claims of the sign-in, with its times as they stood when it came.
    func verifyDeferred(_ unverified: UnverifiedIDToken, previous: IDToken?) async -> IDTokenVerifier.RefreshedIDToken? {
        guard let verifier = idTokenVerifier, let keySet else { return nil }
        // at_hash was checked when it came, against the access token it came with.
        return await verifier.verifyRefreshed(
            unverified.rawValue.value, previous: previous, accessToken: nil, keys: keySet, now: unverified.receivedAt)
    }
}
