import ArgumentParser
import OAuth2

/// `oauth2 refresh`: a new access token from the stored refresh token (RFC 6749 §6).
struct RefreshCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "refresh",
        abstract: "Refresh the stored token now, whatever its expiry.",
        discussion: """
            Rarely needed: "call" and "token --print-access-token" refresh on their
            own. A refresh token the provider rotates is replaced in the store. When
            the provider answers invalid_grant, the grant is gone: the stored token
            is deleted and you sign in again.

            Example:
              oauth2 refresh --token-url https://id.example/token --client-id my-app
            """
    )

    @OptionGroup var common: CommonOptions

    func run() async throws {
        try await Session.run(common) { session in
            let client = try await session.client()
            let token = try await client.refreshAccessToken()
            StandardError.line("Refreshed. " + TokenSummary(token, account: client.account).sentence)
        }
    }
}
