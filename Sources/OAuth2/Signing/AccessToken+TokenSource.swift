#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A bare token signs requests as it is: for a token no account holds yet,
/// such as the one a sign-in just got, used to ask the provider's API whose
/// it is before ``OAuth2Client/adopt(_:)``. It is never refreshed; a 401
/// ends with `invalid_token`.
extension AccessToken: TokenSource {
    /// The token itself.
    public func token() async throws(OAuth2Error) -> AccessToken {
        self
    }

    /// A bare token has no replacement.
    ///
    /// - Throws: ``OAuth2Error`` `invalid_token`.
    public func token(replacing rejected: AccessToken) async throws(OAuth2Error) -> AccessToken {
        throw OAuth2Error(
            code: .invalidToken, message: "the resource server rejected the token, and a token without an account cannot be refreshed")
    }
}
