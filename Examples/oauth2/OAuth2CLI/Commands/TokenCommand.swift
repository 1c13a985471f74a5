import ArgumentParser
import OAuth2

/// `oauth2 token`: what is stored, or a usable access token for a script.
struct TokenCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "token",
        abstract: "Show the stored token's metadata, or print a valid access token.",
        discussion: """
            --format says what to print:
              text          the token's type, expiry, scopes and whether there is a
                            refresh token, never the token itself (the default)
              json          the same as one JSON object (account, token_type,
                            expires_at, expires_in, expired, scopes,
                            has_refresh_token, ...; binding when the token is
                            bound: {"type": "dpop", "jkt": the key's thumbprint},
                            never the key)
              access-token  the access token alone, refreshed first when it is about
                            to expire: for scripts that call an API with another
                            tool; --print-access-token is its short spelling
              kubernetes    a client.authentication.k8s.io/v1 ExecCredential for
                            kubectl's exec credential plugin, {"apiVersion": …,
                            "kind": "ExecCredential", "status": {"token": …,
                            "expirationTimestamp": RFC 3339}} (refreshed first like
                            access-token; expirationTimestamp left out when the
                            provider gave no expiry; the apiVersion
                            client.authentication.k8s.io/v1beta1 when kubectl asks
                            for it in KUBERNETES_EXEC_INFO; refused for a token
                            bound to a DPoP key, which kubectl would send as a
                            bearer token)

            Example:
              oauth2 token --format json
              curl -H "Authorization: Bearer $(oauth2 token --print-access-token)" https://api.example/me
              oauth2 token --provider corp --format kubernetes

            The tokens "oauth2 call URL" got by itself are kept per resource:
            --resource URL (the resource, or a URL under it, as the call took it)
            prints the one for that resource, and --provider NAME alone does when
            the provider that call saved has exactly one resource (with several,
            it is a usage error naming them). They are refreshed the same way;
            "oauth2 token" never signs in: "oauth2 call" does.
              oauth2 token --resource https://mcp.example/mcp --print-access-token
            """
    )

    @OptionGroup var common: CommonOptions

    /// What `oauth2 token` prints.
    enum Format: String, ExpressibleByArgument, CaseIterable {
        case text, json
        case accessToken = "access-token"
        case kubernetes
    }

    @Option(help: "What to print, as the discussion above says (default text).")
    var format: Format?

    // The spelling scripts already use, kept as a flag of its own because it
    // is the common case: `$(oauth2 token --print-access-token)`.
    @Flag(name: .customLong("print-access-token"), help: "The same as --format access-token: a valid access token alone.")
    var printAccessToken = false

    // Replaced by --format json; refused with that pointer rather than as an
    // unknown option, so a script written for it learns the new spelling.
    @Flag(name: .customLong("json"), help: .hidden)
    var refusedJSON = false

    func validate() throws {
        if refusedJSON {
            throw ValidationError("--json is now --format json")
        }
        if printAccessToken, let format, format != .accessToken {
            throw ValidationError(
                "--print-access-token is --format access-token: it cannot be combined with --format \(format.rawValue)")
        }
    }

    func run() async throws {
        let format = format ?? (printAccessToken ? .accessToken : .text)
        try await Session.run(common) { session in
            let target = try Self.resourceTarget(session.settings)
            func usableToken() async throws -> AccessToken {
                if let target { return try await Self.resourceToken(target, session: session) }
                return try await session.client().token()
            }
            switch format {
            case .accessToken:
                StandardOutput.line(try await usableToken().accessToken.value)
                return
            case .kubernetes:
                let token = try await usableToken()
                try TokenSummary.refuseBoundToken(token, to: "kubectl")
                StandardOutput.line(try ExecCredential(token, apiVersion: ExecCredential.requestedAPIVersion()).json())
                return
            case .text, .json:
                break
            }
            let account = session.settings.account
            let stored: AccessToken?
            if let target {
                stored = try await session.resourceStore().load(account: Self.storedAccount(target, settings: session.settings))
            } else {
                stored = try await session.storeForReading().load(account: account)
            }
            guard let token = stored else {
                let what = target.map { "account \(account) and the resource \($0.resource)" } ?? "account \(account)"
                throw OAuth2Error(code: .notAuthenticated, message: "no token is stored for \(what)")
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
