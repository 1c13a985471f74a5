#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension OAuth2Configuration {
    /// The binding every token this configuration obtains is stamped with.
    public var binding: TokenBinding {
        TokenBinding(tokenEndpoint: tokenEndpoint.absoluteString, clientID: clientID, resource: boundResource?.absoluteString)
    }
}

extension OAuth2Configuration {
    /// Throws `provider_mismatch` when `token` was issued to another provider
    /// or client than this configuration's; a token without a binding (stored
    /// before bindings existed) passes.
    ///
    /// - Parameters:
    ///   - subject: how the message names the token ("the token stored for account "x"").
    ///   - consequence: what the message says follows, after a semicolon, or `nil`.
    func requireOwnBinding(of token: AccessToken, subject: String = "the token", consequence: String? = nil) throws(OAuth2Error) {
        guard let issued = token.binding, issued != binding else { return }
        throw OAuth2Error(
            code: .providerMismatch,
            message: "\(subject) was issued to \(issued), not to this configuration's \(binding)" + (consequence.map { "; \($0)" } ?? "")
        )
    }
}
