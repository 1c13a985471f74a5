#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// How a token was obtained: the grant and the scopes asked for.
///
/// Stored with the token, so that a later process can renew a token that has
/// no refresh token by running the same grant again: a client-credentials
/// token (RFC 6749 §4.4.3 issues no refresh token for it) or a JWT-bearer
/// token whose configuration can make a fresh assertion. Kept across
/// refreshes. Holds no secret.
public struct TokenGrant: Sendable, Hashable, Codable {
    /// The `grant_type` that obtained the token (`client_credentials`,
    /// `authorization_code`, `urn:ietf:params:oauth:grant-type:jwt-bearer`, …).
    public var type: String
    /// The scopes the grant asked for (empty: the provider's default).
    public var scopes: [String]

    /// Creates a grant record.
    public init(type: String, scopes: [String]) {
        self.type = type
        self.scopes = scopes
    }

    /// `client_credentials` (RFC 6749 §4.4).
    public static let clientCredentialsType = "client_credentials"
    /// The JWT bearer assertion grant (RFC 7523 §2.1).
    public static let jwtBearerType = "urn:ietf:params:oauth:grant-type:jwt-bearer"
}
