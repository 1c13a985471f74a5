import ArgumentParser
import OAuth2

/// `oauth2 client-credentials`: a token for the client itself (RFC 6749 §4.4).
struct ClientCredentialsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "client-credentials",
        abstract: "Get a token for the client itself (client credentials grant) and store it.",
        discussion: """
            Needs a confidential client: its secret from --client-secret-file or
            OAUTH2_CLIENT_SECRET.

            Example:
              OAUTH2_CLIENT_SECRET="$SECRET" oauth2 client-credentials \\
                  --token-url https://id.example/token --client-id service --scope read --account service
            """
    )

    @OptionGroup var common: CommonOptions

    @OptionGroup var dpop: DPoPOptions

    func run() async throws {
        try await Session.run(common) { session in
            let client = try await session.client(dpop: dpop.settings)
            let token = try await client.authenticate(.clientCredentials)
            StandardError.line("Got a token. " + TokenSummary(token, account: client.account).sentence)
        }
    }
}
