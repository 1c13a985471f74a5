import ArgumentParser
import OAuth2

/// `oauth2 revoke`: revoke at the provider (RFC 7009) and forget the token.
struct RevokeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "revoke",
        abstract: "Revoke the token at the provider and delete it here.",
        discussion: """
            Revokes the refresh token (which ends the grant), then the access token,
            at the revocation endpoint when there is one, and deletes the stored
            token whatever the provider answers. Fails when the provider did not
            confirm; "logout" is the forgiving variant.

            Example:
              oauth2 revoke --revoke-url https://id.example/revoke --token-url https://id.example/token --client-id my-app
            """
    )

    @OptionGroup var common: CommonOptions

    func run() async throws {
        try await Session.run(common) { session in
            let client = try await session.client()
            try await client.revoke()
            if client.configuration.revocationEndpoint == nil {
                StandardError.line(
                    "Deleted the token of account \(client.account). There is no revocation endpoint (--revoke-url), so the provider was not told."
                )
            } else {
                StandardError.line("Revoked the token at the provider and deleted it (account \(client.account)).")
            }
        }
    }
}
