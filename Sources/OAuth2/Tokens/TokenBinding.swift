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
public struct TokenBinding: Sendable, Hashable, Codable {
    /// The token endpoint's URL, as configured.
    public var tokenEndpoint: String
    /// The client id the token was issued to.
    public var clientID: String

    /// Creates a binding.
    public init(tokenEndpoint: String, clientID: String) {
        self.tokenEndpoint = tokenEndpoint
        self.clientID = clientID
    }
}

extension TokenBinding: CustomStringConvertible {
    /// `client "id" at <token endpoint without userinfo or query>`, for messages.
    public var description: String {
        let endpoint = URL(string: tokenEndpoint)?.redactingQuery ?? "(an unreadable URL)"
        return "client \"\(OAuth2Error.sanitize(String(clientID.prefix(100))))\" at \(endpoint)"
    }
}
