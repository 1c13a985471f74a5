#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The provider and client a token was issued to.
///
/// Every token the client obtains is stamped with its configuration's
/// binding before it is stored. A stored token whose binding differs from the
/// configuration reading it is never used, refreshed or revoked: its access
/// token would go to another provider's API and its refresh token to another
/// token endpoint. The client reports `provider_mismatch` instead.
///
/// The token endpoint names the provider (it is where the refresh token is
/// redeemed, so it is the one place a token may go back to); the client id
/// names the client. Neither is a secret.
///
/// A token obtained for one protected resource (RFC 8707 `resource`, by a
/// ``ProtectedResourceClient``) also records that resource: it is only ever
/// sent to URLs of that resource (``SigningTransport`` refuses the others
/// with `resource_mismatch`). Tokens and configurations without one behave
/// as before, and store the same bytes.
public struct TokenBinding: Sendable, Hashable, Codable {
    /// The token endpoint's URL, as configured.
    public var tokenEndpoint: String
    /// The client id the token was issued to.
    public var clientID: String
    /// The one resource the token is for (its audience), or `nil` when the
    /// token is for whatever the configuration's resources are.
    public var resource: String?

    /// Creates a binding.
    public init(tokenEndpoint: String, clientID: String, resource: String? = nil) {
        self.tokenEndpoint = tokenEndpoint
        self.clientID = clientID
        self.resource = resource
    }
}

extension TokenBinding: CustomStringConvertible {
    /// `client "id" at <token endpoint without userinfo or query>`, for messages.
    public var description: String {
        let endpoint = URL(string: tokenEndpoint)?.redactingQuery ?? "(an unreadable URL)"
        let client = "client \"\(OAuth2Error.sanitize(String(clientID.prefix(100))))\" at \(endpoint)"
        guard let resource else { return client }
        return client + " for resource \(URL(string: resource)?.redactingQuery ?? "(an unreadable URL)")"
    }
}
