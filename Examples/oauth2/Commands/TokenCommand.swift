import ArgumentParser
import OAuth2

/// `oauth2 token`: what is stored, or a usable access token for a script.
struct TokenCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "token",
        abstract: "Show the stored token's metadata, or print a valid access token.",
        discussion: """
            Without options: the token's type, expiry, scopes and whether there is a
            refresh token, never the token itself. --json prints the same as one JSON
            object (account, token_type, expires_at, expires_in, expired, scopes,
            has_refresh_token). --print-access-token prints the access token alone,
            refreshing it first when it is about to expire: for scripts that call an
            API with another tool.

            Example:
              oauth2 token --json
              curl -H "Authorization: Bearer $(oauth2 token --print-access-token)" https://api.example/me
            """
    )

    @OptionGroup var common: CommonOptions

    @Flag(help: "Print the metadata as JSON.")
    var json = false

    @Flag(name: .customLong("print-access-token"), help: "Print a valid access token (refreshing first when needed).")
    var printAccessToken = false

    func validate() throws {
        if json && printAccessToken {
            throw ValidationError("--json and --print-access-token cannot be combined")
        }
    }

    func run() async throws {
        try await Session.run(common) { session in
            if printAccessToken {
                let token = try await session.client().token()
                StandardOutput.line(token.accessToken.value)
                return
            }
            let account = session.settings.account
            guard let token = try await session.storeForReading().load(account: account) else {
                throw OAuth2Error(code: .notAuthenticated, message: "no token is stored for account \(account)")
            }
            let summary = TokenSummary(token, account: account)
            if json {
                StandardOutput.line(try summary.json())
            } else {
                summary.lines.forEach(StandardOutput.line)
            }
        }
    }
}
