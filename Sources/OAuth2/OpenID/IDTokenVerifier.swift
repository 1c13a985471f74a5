#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Crypto

/// Verifies ID tokens (OpenID Connect Core 1.0 §3.1.3.7, §12.2): the JWS
/// first, then the claims. Nothing of a token is trusted before its
/// signature is (a refreshed token whose signature cannot be checked yet is
/// refused on its unsigned claims, never accepted on them); no error names a
/// claim's value.
struct IDTokenVerifier: Sendable {
    let settings: OpenIDSettings
    let issuer: String
    let clientID: String
    /// Which `iss` values name ``issuer`` (the configuration's ``IssuerRule``).
    var issuerRule: IssuerRule = .exact

    /// What the client expects of the ID token of one token response.
    enum Expectation: Sendable {
        /// No particular expectation: a grant other than the code flow or a
        /// refresh. An ID token that comes is verified; none is required.
        case any
        /// The code flow's token response. With a nonce (the request asked
        /// for `openid`), an ID token is required and must carry that nonce.
        case signIn(nonce: Secret?)
        /// A refresh: an ID token may come; if it does, it must have the
        /// issuer, subject and audience of the one signed in (`previous`).
        case refresh(previous: IDToken?)
    }

    /// Verifies the raw ID token of a token response.
    ///
    /// - Parameters:
    ///   - raw: the `id_token` value.
    ///   - accessToken: the access token of the same response, for `at_hash`.
    /// - Throws: ``OAuth2Error``: `invalid_jwt`, `unsupported_algorithm`,
    ///   `invalid_signature`, `unknown_signing_key` and the key set's fetch
    ///   errors for the JWS; `invalid_id_token`, `issuer_mismatch`,
    ///   `audience_mismatch`, `id_token_expired`, `id_token_not_yet_valid`,
    ///   `nonce_mismatch`, `at_hash_mismatch`, `subject_mismatch` for the claims.
    func verify(
        _ raw: String,
        expectation: Expectation,
        accessToken: Secret?,
        keys: KeySetCache,
        now: Date
    ) async throws(OAuth2Error) -> IDToken {
        // The size limit is CompactJWS's: checked before any byte is copied.
        let jws = try CompactJWS(raw, maxSize: settings.maxIDTokenSize)
        _ = try await keys.verify(jws, allowedAlgorithms: settings.signingAlgorithms)
        let token = try IDToken(claims: jws.payloadObject())
        try checkClaims(token, algorithm: jws.algorithm, expectation: expectation, accessToken: accessToken, now: now)
        return token
    }

    /// What came of verifying a refreshed ID token.
    enum RefreshedIDToken: Sendable {
        /// Verified: its claims.
        case verified(IDToken)
        /// Not verified, for `error`: refused (a security signal) or deferred
        /// (it could not be verified now, and what could be checked without
        /// the signature names the signed-in user).
        case unverified(OAuth2Error, refused: Bool)
    }

    /// Verifies the ID token of a refresh's response, never throwing: the
    /// provider has rotated the refresh token by then, and the caller keeps
    /// it whatever this says (OpenID Connect Core §12.2).
    ///
    /// A failure that may pass on its own (the key set cannot be fetched or
    /// lacks the token's key, the clocks disagree) defers the verification
    /// when the claims, read without their signature, name the same issuer,
    /// subject, audience and authorized party as `previous`: a mismatch there
    /// refuses the token whether or not the signature could be checked.
    func verifyRefreshed(_ raw: String, previous: IDToken?, accessToken: Secret?, keys: KeySetCache, now: Date) async
        -> RefreshedIDToken
    {
        let expectation = Expectation.refresh(previous: previous)
        do {
            return .verified(try await verify(raw, expectation: expectation, accessToken: accessToken, keys: keys, now: now))
        } catch {
            guard !Self.refusals.contains(error.code) else { return .unverified(error, refused: true) }
            do throws(OAuth2Error) {
                let jws = try CompactJWS(raw, maxSize: settings.maxIDTokenSize)
                let unverified = try IDToken(claims: jws.payloadObject())
                try checkIdentity(unverified, algorithm: jws.algorithm, expectation: expectation, accessToken: accessToken)
            } catch let mismatch {
                return .unverified(mismatch, refused: true)
            }
            return .unverified(error, refused: false)
        }
    }

    /// The verification errors that refuse an ID token for good: its form,
    /// its signature or its claims are wrong. Any other (the key set's fetch,
    /// an unknown key, the times) may pass on its own.
    static let refusals: Set<OAuth2Error.Code> = [
        .invalidJWT, .unsupportedAlgorithm, .invalidSignature, .invalidIDToken, .issuerMismatch, .audienceMismatch,
        .nonceMismatch, .accessTokenHashMismatch, .subjectMismatch, .hostedDomainMismatch,
    ]

    /// The claim checks, on a token whose signature was verified: whose it
    /// is first, then its times.
    func checkClaims(
        _ token: IDToken,
        algorithm: JWSAlgorithm,
        expectation: Expectation,
        accessToken: Secret?,
        now: Date
    ) throws(OAuth2Error) {
        try checkIdentity(token, algorithm: algorithm, expectation: expectation, accessToken: accessToken)
        let leeway = settings.clockLeeway.timeInterval
        guard now.timeIntervalSince(token.expiresAt) < leeway else {
            throw OAuth2Error(
                code: .idTokenExpired,
                message: "the ID token expired (exp is past, beyond the clock leeway of \(settings.clockLeeway.secondsDescription))")
        }
        guard token.issuedAt.timeIntervalSince(now) <= leeway else {
            throw OAuth2Error(code: .idTokenNotYetValid, message: "the ID token's iat is in the future, beyond the clock leeway")
        }
        if let notBefore = token.notBefore, notBefore.timeIntervalSince(now) > leeway {
            throw OAuth2Error(code: .idTokenNotYetValid, message: "the ID token's nbf is in the future, beyond the clock leeway")
        }
    }

    /// The checks of whose token it is and what it came with: `iss`, `aud`,
    /// `azp`, the nonce or the signed-in user's claims, `at_hash`. They need
    /// no clock, and on a token whose signature could not be checked yet they
    /// can still refuse it.
    func checkIdentity(_ token: IDToken, algorithm: JWSAlgorithm, expectation: Expectation, accessToken: Secret?) throws(OAuth2Error) {
        try issuerRule.check(token, configured: issuer)
        try Self.checkAudience(token.audience, authorizedParty: token.authorizedParty, clientID: clientID, of: "the ID token")
        if let domains = settings.allowedHostedDomains {
            guard let domain = token.hostedDomain, domains.contains(where: { $0.lowercased() == domain.lowercased() }) else {
                throw OAuth2Error(
                    code: .hostedDomainMismatch, message: "the ID token's hd (hosted domain) is missing or not one this app allows")
            }
        }
        switch expectation {
        case .signIn(let nonce?):
            guard let sent = token.nonce else {
                throw OAuth2Error(code: .nonceMismatch, message: "the ID token has no nonce, though the authorization request sent one")
            }
            guard Secret.constantTimeEquals(sent, nonce.value) else {
                throw OAuth2Error(code: .nonceMismatch, message: "the ID token's nonce is not the one this authorization request sent")
            }
        case .refresh(let previous?):
            try checkSameSignIn(token, as: previous)
        case .signIn(nil), .refresh(nil), .any:
            break
        }
        if let expected = token.accessTokenHash, let accessToken {
            guard let actual = Self.accessTokenHash(accessToken, algorithm: algorithm) else {
                throw OAuth2Error(
                    code: .accessTokenHashMismatch, message: "the ID token's at_hash cannot be checked for algorithm \(algorithm)")
            }
            guard Secret.constantTimeEquals(actual, expected) else {
                throw OAuth2Error(code: .accessTokenHashMismatch, message: "the ID token's at_hash does not match the access token")
            }
        }
    }

    /// OpenID Connect Core §3.1.3.7 steps 3–5: `aud` contains the client's
    /// id, and an `azp` names this client; with several audiences and no
    /// `azp`, refused. Back-Channel Logout §2.6 validates a logout token's
    /// `aud` the same way; `what` names the token in the messages.
    static func checkAudience(_ audience: [String], authorizedParty: String?, clientID: String, of what: String) throws(OAuth2Error) {
        guard audience.contains(clientID) else {
            throw OAuth2Error(code: .audienceMismatch, message: "\(what)'s aud does not contain this client's id")
        }
        if let party = authorizedParty {
            guard party == clientID else {
                throw OAuth2Error(code: .audienceMismatch, message: "\(what)'s azp is another client")
            }
        } else if audience.count > 1 {
            throw OAuth2Error(code: .audienceMismatch, message: "\(what) has several audiences and no azp naming this client")
        }
    }

    /// OpenID Connect Core §12.2: a refreshed ID token has the sign-in's
    /// `iss`, `sub` and `aud`; an `azp` is this client's in both, as in every
    /// ID token (``checkIdentity(_:algorithm:expectation:accessToken:)``). `auth_time` is
    /// not compared: §12.2 binds it only where the sign-in asked for it
    /// (`max_age`), which the client does not, and a provider whose user
    /// authenticated again in the same session sends the newer time.
    /// The issuers are the same by the ``IssuerRule``: equal (a template's
    /// tokens of one tenant), or two spellings of ``IssuerRule/anyOf(_:)``.
    func checkSameSignIn(_ token: IDToken, as previous: IDToken) throws(OAuth2Error) {
        guard issuerRule.sameIssuer(token.issuer, previous.issuer, configured: issuer), token.subject == previous.subject else {
            throw OAuth2Error(code: .subjectMismatch, message: "the refreshed ID token is for another user (sub) than the one signed in")
        }
        guard Set(token.audience) == Set(previous.audience) else {
            throw OAuth2Error(code: .audienceMismatch, message: "the refreshed ID token's aud is not the sign-in's")
        }
    }

    /// `at_hash` (OpenID Connect Core §3.1.3.6): the base64url of the left half
    /// of the hash of the access token's ASCII, the hash being the one of the
    /// JWS algorithm (SHA-512 for EdDSA with Ed25519).
    static func accessTokenHash(_ accessToken: Secret, algorithm: JWSAlgorithm) -> String? {
        let data = Data(accessToken.value.utf8)
        let digest: [UInt8]
        switch algorithm {
        case .rs256, .ps256, .es256, .hs256: digest = Array(SHA256.hash(data: data))
        case .rs384, .ps384, .es384, .hs384: digest = Array(SHA384.hash(data: data))
        case .rs512, .ps512, .es512, .hs512, .edDSA: digest = Array(SHA512.hash(data: data))
        default: return nil
        }
        return Base64URL.encode(digest.prefix(digest.count / 2))
    }
}
