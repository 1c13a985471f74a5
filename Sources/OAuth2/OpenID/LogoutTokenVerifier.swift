#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Verifies back-channel logout tokens (OpenID Connect Back-Channel Logout
/// 1.0 §2.6) with what verifies the provider's ID tokens: the same settings
/// (allowed algorithms, leeway, size limit), issuer rule, client id and key
/// set. The JWS first, then the claims; the `jti` is recorded last, so that
/// only a token that passed every other check can take a place in the
/// replay cache.
struct LogoutTokenVerifier: Sendable {
    let idTokens: IDTokenVerifier
    let replays: LogoutTokenReplayCache

    /// The `typ` values of a logout token (§2.4 recommends `logout+jwt`;
    /// RFC 7515 §4.1.9 lets the `application/` prefix go), compared without
    /// regard to case. Any other says the JWT is another kind of token.
    static let acceptedTypes: Set<String> = ["jwt", "logout+jwt", "application/logout+jwt"]

    /// Verifies `raw` and returns its claims.
    ///
    /// - Throws: ``OAuth2Error``: the JWS's (`invalid_jwt`, `unsupported_algorithm`,
    ///   `invalid_signature`, `unknown_signing_key`, the key set's fetch errors);
    ///   `issuer_mismatch`, `audience_mismatch`; `invalid_logout_token` (a
    ///   `typ` of another token, the claims of §2.4, `exp` or `iat` outside
    ///   the leeway); `logout_token_replayed`.
    func verify(_ raw: String, keys: KeySetCache, now: Date) async throws(OAuth2Error) -> LogoutToken {
        let settings = idTokens.settings
        let jws = try CompactJWS(raw, maxSize: settings.maxIDTokenSize)
        if let type = jws.header["typ"] {
            guard let text = type.stringValue, Self.acceptedTypes.contains(text.lowercased()) else {
                throw OAuth2Error(code: .invalidLogoutToken, message: "the logout token's typ names another kind of token")
            }
        }
        // §2.6 step 3: the signature as an ID token's (OpenID Connect Core
        // §3.1.3.7 steps 6–8), so only the algorithms the client expects of
        // its ID tokens; never none.
        _ = try await keys.verify(jws, allowedAlgorithms: settings.signingAlgorithms)
        let token = try LogoutToken(claims: jws.payloadObject())
        // §2.6 step 4: iss, aud, iat and exp as an ID token's.
        try idTokens.issuerRule.check(token.issuer, claims: token.claims, configured: idTokens.issuer, of: "the logout token")
        try IDTokenVerifier.checkAudience(
            token.audience, authorizedParty: token.claims["azp"]?.stringValue, clientID: idTokens.clientID, of: "the logout token")
        let leeway = settings.clockLeeway.timeInterval
        guard now.timeIntervalSince(token.expiresAt) < leeway else {
            throw OAuth2Error(
                code: .invalidLogoutToken,
                message: "the logout token expired (exp is past, beyond the clock leeway of \(settings.clockLeeway.secondsDescription))")
        }
        guard token.issuedAt.timeIntervalSince(now) <= leeway else {
            throw OAuth2Error(code: .invalidLogoutToken, message: "the logout token's iat is in the future, beyond the clock leeway")
        }
        // §2.6 step 10 (optional, done): a jti received before is refused.
        try replays.accept(token, keepUntil: token.expiresAt.addingTimeInterval(leeway), now: now)
        return token
    }
}

/// The `jti`s of the logout tokens accepted lately, per issuer, each kept
/// until its token could no longer be accepted (its `exp` plus the leeway).
///
/// Bounded: at ``capacity`` entries the expired ones go first, then the one
/// that expires soonest; an attacker cannot fill it with forged tokens, since
/// only verified tokens are entered. It lives in one process: an app that
/// runs as several instances accepts a replay on another instance, where
/// ending the same session twice does no harm.
final class LogoutTokenReplayCache: Sendable {
    let capacity: Int
    private let entries = LockedValue([String: Date]())

    init(capacity: Int = 10_000) {
        self.capacity = max(1, capacity)
    }

    /// Records the token's `jti`, or refuses it when it is recorded already.
    ///
    /// - Throws: ``OAuth2Error`` `logout_token_replayed`.
    func accept(_ token: LogoutToken, keepUntil expiry: Date, now: Date) throws(OAuth2Error) {
        // The issuer is part of the key: two providers' jtis may coincide.
        let key = token.issuer + "\u{0}" + token.tokenID
        let fresh = entries.withLock { entries -> Bool in
            if let kept = entries[key], kept > now { return false }
            if entries.count >= capacity {
                entries = entries.filter { $0.value > now }
                if entries.count >= capacity, let soonest = entries.min(by: { $0.value < $1.value }) {
                    entries[soonest.key] = nil
                }
            }
            entries[key] = expiry
            return true
        }
        guard fresh else {
            throw OAuth2Error(code: .logoutTokenReplayed, message: "this logout token (its jti) was received before")
        }
    }

    /// How many `jti`s are kept, expired ones included until the next purge.
    var count: Int { entries.withLock { $0.count } }
}
