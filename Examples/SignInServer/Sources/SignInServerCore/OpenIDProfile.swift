import Foundation
import OAuth2

/// Who an OpenID Connect user is, as their verified ID token says: what
/// `/me` shows and `/` greets, instead of the provider's API answer.
///
/// The claims come from the ID token the framework verified at sign-in (or
/// at the last refresh) and stored with the token; never the ID token
/// itself, which is a credential.
struct OpenIDProfile: Sendable, Encodable {
    /// `iss`: the provider that signed the user in.
    let issuer: String
    /// `sub`: the user at that provider.
    let subject: String
    /// `email`, when the provider shares it (the `email` scope).
    let email: String?
    /// `name`, when the provider shares it (the `profile` scope).
    let name: String?
    /// `preferred_username`, when the provider shares it; not stable, shown only.
    let preferredUsername: String?
    /// What the userinfo endpoint says about the user now, when the provider has one.
    let userinfo: [String: JSONValue]?

    enum CodingKeys: String, CodingKey {
        case issuer, subject, email, name, userinfo
        case preferredUsername = "preferred_username"
    }

    /// The name the home page greets the user by.
    var displayName: String {
        name ?? preferredUsername ?? email ?? subject
    }

    /// The `/me` answer: this profile as JSON.
    var body: Data {
        get throws(ProfileError) {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            do {
                return try encoder.encode(self)
            } catch {
                throw .noUsername
            }
        }
    }

    /// The profile of the client's account.
    ///
    /// With a userinfo endpoint, it is asked first, through the client
    /// (``OAuth2Client/userInfo()``: signed, refreshed when needed, and only
    /// an answer about the ID token's `sub` is taken), so that a grant the
    /// provider no longer honours sends the user to sign in again, as the
    /// API call does for a plain OAuth provider.
    ///
    /// - Throws: ``ProfileError/oauth2(_:)``: `not_authenticated` when the
    ///   account has no token or its token no ID token; the client's errors.
    static func load(for client: OAuth2Client) async throws(ProfileError) -> OpenIDProfile {
        do throws(OAuth2Error) {
            let info = client.configuration.openID?.userinfoEndpoint == nil ? nil : try await client.userInfo()
            guard let idToken = try await client.idToken() else {
                throw OAuth2Error(code: .notAuthenticated, message: "the account has no token with an ID token")
            }
            return OpenIDProfile(
                issuer: idToken.issuer,
                subject: idToken.subject,
                email: idToken.email,
                name: idToken.name,
                preferredUsername: idToken.preferredUsername,
                userinfo: info?.claims
            )
        } catch {
            throw .oauth2(error)
        }
    }
}
