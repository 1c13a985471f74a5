#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A client secret that is a JWT the client signs with its own private key,
/// sent where a client secret goes (`client_secret_post` or
/// `client_secret_basic`): what Sign in with Apple asks of its clients
/// (Apple's "Generate and validate tokens": an ES256 JWT with the key id as
/// `kid`, the team id as `iss`, the client id as `sub`, `aud`
/// `https://appleid.apple.com`, at most six months long).
///
/// Unlike `client_secret_jwt` and `private_key_jwt` (RFC 7523), which send a
/// new assertion with each request, this secret is made once and reused
/// until it nears its end: the library signs it on first use, keeps it, and
/// signs a new one when less than ``renewalMargin`` of its ``lifetime`` is
/// left, for every token, refresh, revocation and pushed request.
///
/// Set it as ``OAuth2Configuration/signedClientSecret``, with no
/// ``OAuth2Configuration/clientSecret``. Copies of a configuration share the
/// secret made, so one provider signs once per lifetime, whatever the number
/// of clients. Its `description` shows the issuer and key id, never the key
/// nor the secret.
public struct SignedClientSecret: Sendable, CustomStringConvertible {
    /// The longest lifetime Apple accepts: 15,777,000 seconds, six months.
    public static let maximumLifetime: Duration = .seconds(15_777_000)

    /// The `iss` claim: who signs (Apple: the 10-character team id).
    public let issuer: String
    /// The `aud` claim: who checks it (Apple: `https://appleid.apple.com`).
    public let audience: String
    /// The `sub` claim; the configuration's client id when `nil` (Apple: the
    /// Services ID or app id, which is the client id).
    public let subject: String?
    /// The private key that signs; its ``JWTSigningKey/keyID`` is the header's `kid`
    /// (Apple: the 10-character key id of the `.p8` key, ES256).
    public let key: JWTSigningKey
    /// How long each secret is valid (`exp` minus `iat`). One hour by
    /// default: a secret is a credential, and one that leaks is worth less
    /// the sooner it ends; signing a new one costs nothing.
    public let lifetime: Duration
    /// How long before its end a secret is replaced, so none expires on its
    /// way to the provider or on a provider whose clock runs ahead. Five minutes by default.
    public let renewalMargin: Duration

    /// The secret made last, shared by every copy of this value.
    private let cache = LockedValue<Made?>(nil)

    /// A secret made, with what it was made for.
    private struct Made: Sendable {
        let secret: Secret
        let clientID: String
        let issuedAt: Date
        let renewAt: Date
    }

    /// Creates the settings; nothing is signed until a request needs the secret.
    ///
    /// - Throws: ``OAuth2Error`` `invalid_configuration` when the issuer or
    ///   audience is empty, the key is an HMAC key (the point is a private key
    ///   the provider knows the public half of), the lifetime is not positive
    ///   or longer than ``maximumLifetime``, or the margin is negative or not
    ///   shorter than the lifetime.
    public init(
        issuer: String,
        audience: String,
        key: JWTSigningKey,
        subject: String? = nil,
        lifetime: Duration = .seconds(3600),
        renewalMargin: Duration = .seconds(300)
    ) throws(OAuth2Error) {
        guard !issuer.isEmpty, !audience.isEmpty, subject?.isEmpty != true else {
            throw OAuth2Error(
                code: .invalidConfiguration, message: "a signed client secret needs an issuer, an audience and a non-empty subject")
        }
        guard !key.algorithm.isSymmetric else {
            throw OAuth2Error(
                code: .invalidConfiguration, message: "a signed client secret needs a private key (EC, RSA or Ed25519), not an HMAC key")
        }
        guard lifetime > .zero, lifetime <= Self.maximumLifetime else {
            throw OAuth2Error(
                code: .invalidConfiguration,
                message: "a signed client secret's lifetime must be positive and at most \(Self.maximumLifetime.secondsDescription)")
        }
        guard renewalMargin >= .zero, renewalMargin < lifetime else {
            throw OAuth2Error(
                code: .invalidConfiguration, message: "a signed client secret's renewal margin must be shorter than its lifetime")
        }
        self.issuer = issuer
        self.audience = audience
        self.key = key
        self.subject = subject
        self.lifetime = lifetime
        self.renewalMargin = renewalMargin
    }

    /// The secret to send at `now` for `clientID`: the one made last while it
    /// has more than ``renewalMargin`` left (and was not made in the future of
    /// a clock set back), else a new one.
    ///
    /// - Throws: ``OAuth2Error`` `invalid_configuration` when the key fails to sign.
    func secret(clientID: String, now: Date) throws(OAuth2Error) -> Secret {
        try cache.withLock { (made) throws(OAuth2Error) -> Secret in
            if let made, made.clientID == clientID, now >= made.issuedAt, now < made.renewAt {
                return made.secret
            }
            let issuedAt = Date(timeIntervalSince1970: now.timeIntervalSince1970.rounded(.down))
            let expiresAt = issuedAt.addingTimeInterval(lifetime.timeInterval.rounded(.down))
            let claims: [String: JSONValue] = [
                "iss": .string(issuer),
                "sub": .string(subject ?? clientID),
                "aud": .string(audience),
                "iat": .number(issuedAt.timeIntervalSince1970),
                "exp": .number(expiresAt.timeIntervalSince1970),
            ]
            // Apple's header is `alg` and `kid` alone ("Generate and validate tokens").
            let secret = try JWT.sign(claims: claims, key: key, type: nil).opaque
            made = Made(
                secret: secret, clientID: clientID, issuedAt: issuedAt, renewAt: expiresAt.addingTimeInterval(-renewalMargin.timeInterval))
            return secret
        }
    }

    /// The issuer, audience and key id; never the key or a secret.
    public var description: String {
        "SignedClientSecret(iss \(issuer), aud \(audience), kid \(key.keyID ?? "none"), \(key.algorithm.rawValue))"
    }
}
