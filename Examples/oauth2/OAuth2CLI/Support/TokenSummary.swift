import OAuth2

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What may be shown of a token: its metadata, never the token or the refresh token.
struct TokenSummary: Encodable {
    let account: String
    let tokenType: String
    let expiresAt: String?
    let expiresIn: Int?
    let expired: Bool
    let scopes: [String]
    let hasRefreshToken: Bool
    /// The client and token endpoint the token was issued to (neither is a secret).
    let clientID: String?
    let tokenEndpoint: String?
    /// The grant that obtained it; a client-credentials token is renewed by running it again.
    let grantType: String?
    /// The verified ID token's claims (OpenID Connect); never the ID token itself.
    let idToken: IDTokenSummary?
    /// What the token is bound to, so that a thief cannot use it; `nil` for
    /// a bearer token. Never the key itself.
    let binding: Binding?

    /// A sender-constrained token's binding: `{"type":"dpop","jkt":…}` for a
    /// DPoP key (RFC 9449), `{"type":"mtls","x5t#S256":…}` for a client
    /// certificate (RFC 8705), the members of the `cnf` claim the provider
    /// puts in the token for each.
    struct Binding: Encodable, Equatable {
        /// `dpop` or `mtls`.
        let type: String
        /// The DPoP key's RFC 7638 thumbprint.
        let jkt: String?
        /// The client certificate's SHA-256 thumbprint, base64url.
        let certificateThumbprint: String?

        enum CodingKeys: String, CodingKey {
            case type
            case jkt
            case certificateThumbprint = "x5t#S256"
        }

        /// The binding of `token`, or `nil` for a bearer token.
        init?(_ token: AccessToken) {
            if let key = token.dpopKey {
                type = "dpop"
                jkt = key.thumbprint
                certificateThumbprint = nil
            } else if let thumbprint = token.certificateThumbprint {
                type = "mtls"
                jkt = nil
                certificateThumbprint = thumbprint
            } else {
                return nil
            }
        }

        /// "DPoP key jkt …" for the text format.
        var text: String {
            if let jkt { return "DPoP key \(jkt)" }
            if let certificateThumbprint { return "client certificate x5t#S256 \(certificateThumbprint)" }
            return type
        }
    }

    /// Who signed in, as the verified ID token says.
    struct IDTokenSummary: Encodable {
        let issuer: String
        let subject: String
        let audience: [String]
        let expiresAt: String
        let email: String?
        let emailVerified: Bool?
        let name: String?
        let preferredUsername: String?

        enum CodingKeys: String, CodingKey {
            case issuer = "iss"
            case subject = "sub"
            case audience = "aud"
            case expiresAt = "exp"
            case email
            case emailVerified = "email_verified"
            case name
            case preferredUsername = "preferred_username"
        }

        /// The claims are the provider's text: a verified signature says who
        /// wrote them, not that they are safe on a terminal (an escape sequence
        /// in `name` would reach it), so they pass through the sanitizer the
        /// provider's error descriptions do.
        init(_ token: IDToken) {
            let sanitize = OAuth2Error.sanitize
            issuer = sanitize(token.issuer)
            subject = sanitize(token.subject)
            audience = token.audience.map(sanitize)
            expiresAt = token.expiresAt.formatted(.iso8601)
            email = token.email.map(sanitize)
            emailVerified = token.emailVerified
            name = token.name.map(sanitize)
            preferredUsername = token.preferredUsername.map(sanitize)
        }
    }

    enum CodingKeys: String, CodingKey {
        case clientID = "client_id"
        case tokenEndpoint = "token_endpoint"
        case grantType = "grant_type"
        case account
        case tokenType = "token_type"
        case expiresAt = "expires_at"
        case expiresIn = "expires_in"
        case expired
        case scopes
        case hasRefreshToken = "has_refresh_token"
        case idToken = "id_token"
        case binding
    }

    init(_ token: AccessToken, account: String, now: Date = Date()) {
        self.account = account
        tokenType = token.tokenType
        expiresAt = token.expiresAt.map { $0.formatted(.iso8601) }
        // Clamped before the conversion: a token file may hold any date, and Int(_:) traps outside its range.
        expiresIn = token.expiresAt.map { Int(min(max(0, $0.timeIntervalSince(now).rounded(.down)), Double(Int32.max))) }
        expired = token.isExpired(at: now)
        scopes = token.scopes
        hasRefreshToken = token.refreshToken != nil
        clientID = token.binding?.clientID
        tokenEndpoint = token.binding.flatMap { URL(string: $0.tokenEndpoint) }.map { $0.redactedForMessages(marksQuery: false) }
        grantType = token.grant?.type
        idToken = token.idToken.map(IDTokenSummary.init)
        binding = Binding(token)
    }

    /// Refuses to hand `token` to a program that presents tokens as bearer
    /// tokens (git, kubectl) when it is bound to a DPoP key or a client
    /// certificate: without the proof or the certificate it is useless to
    /// that program, and a bound token is never sent as a bearer token.
    ///
    /// - Throws: `OAuth2Error` `unsupported_token_type` for a bound token.
    static func refuseBoundToken(_ token: AccessToken, to program: String) throws(OAuth2Error) {
        guard let binding = Binding(token) else { return }
        throw OAuth2Error(
            code: .unsupportedTokenType,
            message:
                "this token is bound to a \(binding.text): \(program) would present it as a bearer token, without the \(binding.jkt != nil ? "proof" : "client certificate") it needs; use `oauth2 call`, or a grant without \(binding.jkt != nil ? "--dpop" : "--client-certificate") for \(program)"
        )
    }

    /// One JSON object on one line, keys sorted.
    func json() throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(self), as: UTF8.self)
    }

    /// The lines `oauth2 token` prints.
    var lines: [String] {
        [
            "account: \(account)",
            "type: \(tokenType)",
            "expires: \(expiresLine)",
            "scopes: \(scopes.isEmpty ? "(none)" : scopes.joined(separator: " "))",
            "refresh token: \(hasRefreshToken ? "yes" : "no")",
            "issued to: \(clientID.map { "client \($0) at \(tokenEndpoint ?? "?")" } ?? "(not recorded)")",
            "grant: \(grantType ?? "(not recorded)")",
            "bound to: \(binding?.text ?? "nothing (a bearer token: whoever holds it can use it)")",
        ]
            + (idToken.map { id in
                [
                    "signed in as: \(id.subject) at \(id.issuer) (ID token verified)",
                    "email: \(id.email ?? "(not shared)")\(id.emailVerified == true ? " (verified)" : "")",
                    "name: \(id.name ?? "(not shared)")",
                ]
            } ?? [])
    }

    /// One sentence for stderr after a grant or a refresh.
    var sentence: String {
        let scopeText = scopes.isEmpty ? "no scopes" : "scopes \(scopes.joined(separator: " "))"
        let signedIn = idToken.map { " Signed in as \($0.subject) at \($0.issuer) (ID token verified)." } ?? ""
        let bound = binding.map { " Bound to the \($0.text)." } ?? ""
        return
            "\(tokenType) token for account \(account): \(expiryText), \(scopeText), \(hasRefreshToken ? "with" : "no") refresh token.\(bound)\(signedIn)"
    }

    private var expiresLine: String {
        guard let expiresAt, let expiresIn else { return "unknown (the provider gave no expiry)" }
        return expired ? "\(expiresAt) (expired)" : "\(expiresAt) (in \(expiresIn) s)"
    }

    private var expiryText: String {
        guard let expiresAt, let expiresIn else { return "no expiry given" }
        return expired ? "expired at \(expiresAt)" : "expires in \(expiresIn) s (\(expiresAt))"
    }
}
