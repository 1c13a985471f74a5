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

            --format says the same: text (the default), json, access-token, or
            kubernetes: a client.authentication.k8s.io/v1 ExecCredential for
            kubectl's exec credential plugin, {"apiVersion": …, "kind":
            "ExecCredential", "status": {"token": …, "expirationTimestamp": RFC 3339}}
            (refreshed first like access-token; expirationTimestamp left out when
            the provider gave no expiry). When kubectl asks for
            client.authentication.k8s.io/v1beta1 in KUBERNETES_EXEC_INFO, that
            apiVersion is answered instead.

            Example:
              oauth2 token --json
              curl -H "Authorization: Bearer $(oauth2 token --print-access-token)" https://api.example/me
              oauth2 token --provider corp --format kubernetes
            """
    )

    @OptionGroup var common: CommonOptions

    @Flag(help: "Print the metadata as JSON.")
    var json = false

    @Flag(name: .customLong("print-access-token"), help: "Print a valid access token (refreshing first when needed).")
    var printAccessToken = false

    enum Format: String, ExpressibleByArgument, CaseIterable {
        case text, json
        case accessToken = "access-token"
        case kubernetes
    }

    @Option(help: "What to print: text, json, access-token or kubernetes (an ExecCredential for kubectl).")
    var format: Format?

    func validate() throws {
        if [json, printAccessToken, format != nil].filter({ $0 }).count > 1 {
            throw ValidationError("--json, --print-access-token and --format cannot be combined")
        }
    }

    func run() async throws {
        let format = format ?? (json ? .json : printAccessToken ? .accessToken : .text)
        try await Session.run(common) { session in
            switch format {
            case .accessToken:
                let token = try await session.client().token()
                StandardOutput.line(token.accessToken.value)
                return
            case .kubernetes:
                let token = try await session.client().token()
                StandardOutput.line(try ExecCredential(token, apiVersion: ExecCredential.requestedAPIVersion()).json())
                return
            case .text, .json:
                break
            }
            let account = session.settings.account
            guard let token = try await session.storeForReading().load(account: account) else {
                throw OAuth2Error(code: .notAuthenticated, message: "no token is stored for account \(account)")
            }
            let summary = TokenSummary(token, account: account)
            if format == .json {
                StandardOutput.line(try summary.json())
            } else {
                summary.lines.forEach(StandardOutput.line)
            }
        }
    }
}
