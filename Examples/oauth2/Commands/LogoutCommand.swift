import ArgumentParser
import OAuth2

/// `oauth2 logout`: forget the token, revoking it when the provider allows.
struct LogoutCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "logout",
        abstract: "Delete the token here, revoking it at the provider when possible.",
        discussion: """
        Unlike "revoke", a provider that cannot be reached or refuses is not an
        error (--verbose shows it), and neither is having no token: only failing
        to delete the stored token is.

        Example:
          oauth2 logout --revoke-url https://id.example/revoke --token-url https://id.example/token --client-id my-app
        """
    )

    @OptionGroup var common: CommonOptions

    func run() async throws {
        try await Session.run(common) { session in
            let client = try await session.client()
            try await client.logout()
            StandardError.line("Signed out (account \(client.account)).")
        }
    }
}
