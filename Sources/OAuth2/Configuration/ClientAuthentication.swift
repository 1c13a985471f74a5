#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// How the client authenticates to the token endpoint (RFC 6749 §2.3.1).
public struct ClientAuthentication: Sendable, Hashable, Codable, CustomStringConvertible {
    enum Method: String, Sendable, Hashable, Codable {
        case clientSecretBasic = "client_secret_basic"
        case clientSecretPost = "client_secret_post"
        case privateKeyJWT = "private_key_jwt"
        case clientSecretJWT = "client_secret_jwt"
        case tlsClientAuth = "tls_client_auth"
        case selfSignedTLSClientAuth = "self_signed_tls_client_auth"
        case none
    }

    let method: Method

    /// `Authorization: Basic` with the id and secret each form-urlencoded before base64. The default.
    public static let clientSecretBasic = ClientAuthentication(method: .clientSecretBasic)
    /// `client_id` and `client_secret` in the form body.
    public static let clientSecretPost = ClientAuthentication(method: .clientSecretPost)
    /// A JWT the client signs with its private key (RFC 7523 §2.2, OpenID
    /// Connect Core §9): `client_assertion_type` and `client_assertion` in the
    /// body; the key is the configuration's ``OAuth2Configuration/clientAssertionKey``.
    public static let privateKeyJWT = ClientAuthentication(method: .privateKeyJWT)
    /// A JWT the client signs with HMAC-SHA256 keyed by its client secret
    /// (OpenID Connect Core §9); the secret itself is never sent.
    public static let clientSecretJWT = ClientAuthentication(method: .clientSecretJWT)
    /// A public client: `client_id` in the body, no secret, no Basic header.
    public static let none = ClientAuthentication(method: .none)
    /// Mutual TLS with a certificate a CA issued (RFC 8705 §2.1): the
    /// configuration's ``OAuth2Configuration/clientCertificate`` in the TLS
    /// handshake, `client_id` in the body, no secret.
    public static let tlsClientAuth = ClientAuthentication(method: .tlsClientAuth)
    /// Mutual TLS with a self-signed certificate registered with the
    /// provider (RFC 8705 §2.2): on the wire as ``tlsClientAuth``.
    public static let selfSignedTLSClientAuth = ClientAuthentication(method: .selfSignedTLSClientAuth)

    /// Whether the method needs the client secret.
    var usesSecret: Bool {
        method == .clientSecretBasic || method == .clientSecretPost || method == .clientSecretJWT
    }

    /// Whether the method is mutual TLS, which needs a client certificate.
    var usesCertificate: Bool {
        method == .tlsClientAuth || method == .selfSignedTLSClientAuth
    }

    /// The RFC 8414 name: `client_secret_basic`, `client_secret_post`,
    /// `private_key_jwt`, `client_secret_jwt`, `tls_client_auth`,
    /// `self_signed_tls_client_auth` or `none`.
    public var description: String { method.rawValue }

    /// The method of that RFC 8414 name, or `nil` for an unknown one.
    public init?(name: String) {
        guard let method = Method(rawValue: name) else { return nil }
        self.method = method
    }

    init(method: Method) {
        self.method = method
    }
}
