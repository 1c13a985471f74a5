#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// The two halves of ``ProtectedResourceClient/send(_:)`` for an app whose
/// requests go out through another HTTP stack (an SDK's transport with an
/// authorization hook, such as the MCP Swift SDK's `HTTPClientAuthorizer`):
/// the token to sign a request with, and what to do when the resource refuses it.
extension ProtectedResourceClient {
    /// The token held for the resource `url` belongs to, refreshed when it has
    /// expired; `nil` when the client knows no such resource (in this process
    /// or in the store) or holds no token for it: the app then sends its
    /// request unsigned and hands the refusal to ``authorize(after:for:)``.
    ///
    /// A DPoP-bound token (``Options/dpop``) needs a proof for each request,
    /// which only ``send(_:)`` makes: an app that signs elsewhere should not ask for DPoP.
    ///
    /// - Throws: the store's and the refresh's errors, other than "no token".
    public func token(for url: URL) async throws(OAuth2Error) -> AccessToken? {
        guard let session = try await knownSession(for: url) else { return nil }
        do throws(OAuth2Error) {
            return try await session.client.token()
        } catch  where error.code == .notAuthenticated || error.code == .reauthorizationRequired {
            return nil
        }
    }

    /// Acts on a resource's refusal of a request the app sent itself to
    /// `url`, as ``send(_:)`` would, once: a 401 from a resource the client
    /// does not know starts discovery, identification and a sign-in; a
    /// refusal of the token it holds (`invalid_token`) a sign-in again; a
    /// 403 `insufficient_scope` or a 401 `insufficient_user_authentication`
    /// a step-up with what the resource asked for (``Options/stepUp``).
    /// Returns the token to send the request again with.
    ///
    /// How often to call it for one request is the caller's to bound: a
    /// resource that asks again for what it was just given should end the
    /// request (``OAuth2Error/stepUp`` says what it asked).
    ///
    /// - Throws: ``OAuth2Error``: discovery's and identification's, as
    ///   ``send(_:)``; the refusal itself (`insufficient_scope`,
    ///   `insufficient_user_authentication`, with ``OAuth2Error/stepUp``)
    ///   when step-ups are reported or there is no redirect handler;
    ///   `authorization_required` when a sign-in is needed and there is no
    ///   redirect handler; `unexpected_response` for an answer that is no refusal.
    @discardableResult
    public func authorize(after refusal: HTTPTransportResponse, for url: URL) async throws(OAuth2Error) -> AccessToken {
        guard refusal.status.code == 401 || refusal.status.code == 403 else {
            throw OAuth2Error(
                code: .unexpectedResponse, message: "an answer with status \(refusal.status.code) is no refusal to authorize after",
                httpStatus: refusal.status.code)
        }
        let session: ResourceSession
        let asked: StepUpRequest
        if let known = try await knownSession(for: url) {
            session = known
            let held: AccessToken?
            do throws(OAuth2Error) {
                held = try await session.client.token()
            } catch  where error.code == .notAuthenticated || error.code == .reauthorizationRequired {
                held = nil
            }
            if let held, let error = SigningTransport.refusal(refusal, token: held), let stepUp = error.stepUp {
                guard options.stepUp == .automatic, redirectHandler != nil else { throw error }
                asked = stepUp
            } else {
                asked = session.initialRequest
            }
        } else {
            guard refusal.status.code == 401 else {
                throw OAuth2Error(
                    code: .forbidden, message: "a resource the client does not know refused the request with 403", httpStatus: 403)
            }
            session = try await discover(for: url, challenge: BearerChallenge.parse(refusal.headers[values: .wwwAuthenticate]))
            asked = session.initialRequest
        }
        var current = session
        do throws(OAuth2Error) {
            try await authorize(current, asking: asked)
        } catch let error where error.code == .invalidClient && current.registration != nil {
            // The server forgot the registration: register again, once.
            current = try await registerAgain(current)
            try await authorize(current, asking: asked)
        }
        return try await current.client.token()
    }
}
