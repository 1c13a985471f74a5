import Foundation
import OAuth2

/// Who a token belongs to, as the provider's API says.
struct UserProfile: Sendable {
    /// The user name, from the API answer's configured field.
    let username: String
    /// The API's JSON answer as received, for `/me`.
    let body: Data

    /// The longest user name accepted; it becomes part of a file name.
    static let maximumUsernameLength = 256

    /// Calls the API signed with tokens from `source`: an account's client
    /// (which refreshes when needed), or a token no account holds yet.
    ///
    /// - Throws: ``ProfileError``.
    static func fetch(with source: some TokenSource, through transport: any HTTPTransport, from apiURL: URL, field: String)
        async throws(ProfileError) -> UserProfile
    {
        let response: HTTPTransportResponse
        do throws(OAuth2Error) {
            var request = HTTPTransportRequest(url: apiURL)
            request.headers.append(HTTPField(name: .accept, value: "application/json"))
            response = try await SigningTransport(wrapping: transport, tokenSource: source).send(request)
        } catch {
            throw .oauth2(error)
        }
        guard (200..<300).contains(response.status.code) else {
            throw .unexpectedStatus(response.status.code)
        }
        guard let object = try? JSONSerialization.jsonObject(with: response.body) as? [String: Any],
            let username = object[field] as? String,
            !username.isEmpty, username.count <= maximumUsernameLength
        else {
            throw .noUsername
        }
        return UserProfile(username: username, body: response.body)
    }
}

/// Why the provider's API did not say who the user is.
enum ProfileError: Error {
    /// The framework's error: no token, a lost grant, the provider unreachable, …
    case oauth2(OAuth2Error)
    /// The API answered with a status that is not a success.
    case unexpectedStatus(Int)
    /// The answer was not a JSON object with a user name in the configured field.
    case noUsername

    /// Whether the user has to sign in again: the token is gone or no longer accepted.
    var tokenLost: Bool {
        guard case .oauth2(let error) = self else { return false }
        return [.notAuthenticated, .reauthorizationRequired, .invalidToken].contains(error.code)
    }

    /// What the error page says.
    var explanation: String {
        switch self {
        case .oauth2(let error): "The provider could not be asked who you are (\(error.code.rawValue))."
        case .unexpectedStatus(let status): "The provider's API answered HTTP \(status)."
        case .noUsername: "The provider's API did not say who you are."
        }
    }
}
