import ArgumentParser
import OAuth2
import OAuth2Loopback

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// `oauth2 authorize`: the authorization code flow with PKCE (RFC 6749 §4.1, RFC 7636).
struct AuthorizeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "authorize",
        abstract: "Sign in through the browser (authorization code with PKCE) and store the token.",
        discussion: """
            Prints the authorize URL as the first line of stdout. Open it, sign in,
            and paste the address the browser is sent back to (it starts with the
            redirect URI); the code is exchanged and the token stored. With --listen
            a listener on 127.0.0.1 receives the redirect instead: a redirect URI
            without a port gets a free one (RFC 8252 §7.3), and the printed URL
            carries it. Only the redirect carrying this sign-in's state ends the
            wait; any other request gets an error page.

            With --par the request is first pushed to the provider (RFC 9126) and
            the URL carries only client_id and request_uri; a provider whose
            --issuer metadata requires pushed requests gets them without the flag.
            With --request-object the request is a JWT signed with
            --client-key-file (RFC 9101), by value or inside the push. --fapi2
            follows the FAPI 2.0 Security Profile: pushed, DPoP-bound, iss checked.

            Example:
              oauth2 authorize --authorize-url https://id.example/authorize \\
                  --token-url https://id.example/token --client-id my-app \\
                  --redirect-uri http://127.0.0.1/callback --scope "read write" --listen
            """
    )

    @OptionGroup var common: CommonOptions

    @OptionGroup var dpop: DPoPOptions

    @Flag(help: "Receive the redirect on a loopback listener instead of reading it from stdin.")
    var listen = false

    @Option(name: .customLong("listen-timeout"), help: "How long --listen waits for the browser, in seconds.")
    var listenTimeout: Int = 300

    @Flag(
        name: .customLong("print-url"),
        help:
            "Print the authorize URL and stop: nothing is stored, and nothing fetched but the push of --par (a dry run, to check a provider's settings)."
    )
    var printURL = false

    @Flag(
        name: .customLong("par"),
        help: "Push the authorization request to the provider first (RFC 9126); automatic when --issuer's metadata requires it."
    )
    var pushes = false

    @Option(
        name: .customLong("par-url"),
        help: "The pushed authorization request endpoint, RFC 9126 (OAUTH2_PAR_URL; default: from --issuer's metadata)."
    )
    var pushedAuthorizationURL: String?

    @Flag(
        name: [.customLong("request-object"), .customLong("jar")],
        help: "Send the request as a JWT signed with --client-key-file (RFC 9101); automatic when --issuer's metadata requires it."
    )
    var signsRequestObject = false

    @Flag(
        name: .customLong("fapi2"),
        help:
            "Follow the FAPI 2.0 Security Profile: the request pushed, the token bound to a new DPoP key, iss required; needs --client-key-file (private_key_jwt)."
    )
    var fapi2 = false

    @Option(
        name: .customLong("param"),
        help: "An extra authorize URL parameter, NAME=VALUE, such as access_type=offline or prompt=consent; repeat for more."
    )
    var parameters: [String] = []

    func validate() throws {
        guard (1...86_400).contains(listenTimeout) else {
            throw ValidationError("--listen-timeout must be between 1 and 86400 seconds")
        }
        _ = try additionalParameters()
        _ = try parURL()
    }

    /// `--par-url` (or `OAUTH2_PAR_URL`), when given: an absolute http(s) URL.
    private func parURL() throws -> URL? {
        guard let text = pushedAuthorizationURL ?? EnvironmentVariables.value("OAUTH2_PAR_URL") else { return nil }
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), scheme == "https" || scheme == "http",
            url.host?.isEmpty == false
        else {
            throw ValidationError("--par-url must be an absolute http(s) URL")
        }
        return url
    }

    /// Applies `--par`, `--par-url` and `--request-object` to the configuration.
    private func configureRequest(_ configuration: inout OAuth2Configuration) throws {
        if let url = try parURL() {
            configuration.pushedAuthorizationRequestEndpoint = url
        }
        if pushes {
            guard configuration.pushedAuthorizationRequestEndpoint != nil else {
                throw UsageError(
                    "--par needs the pushed authorization request endpoint: --par-url (or OAUTH2_PAR_URL), or --issuer whose metadata names it"
                )
            }
            configuration.pushedAuthorization = .always
        }
        if fapi2 {
            configuration.securityProfile = .fapi2
        }
        if signsRequestObject {
            guard configuration.clientAssertionKey != nil else {
                throw UsageError("--request-object needs the client's private key: --client-key-file (or OAUTH2_CLIENT_KEY_FILE)")
            }
            configuration.signsRequestObject = true
        }
    }

    /// The `--param` values as name–value pairs; the framework refuses any that would replace one of the flow's own.
    private func additionalParameters() throws -> [(String, String)] {
        try parameters.map { parameter in
            guard let equals = parameter.firstIndex(of: "="), equals != parameter.startIndex else {
                throw ValidationError("--param must be NAME=VALUE")
            }
            return (String(parameter[..<equals]), String(parameter[parameter.index(after: equals)...]))
        }
    }

    /// The provider's parameters (a preset's `access_type=offline`), then the
    /// `--param` ones; a `--param` replaces the provider's of the same name.
    private func additionalParameters(_ settings: Settings) throws -> [(String, String)] {
        let given = try additionalParameters()
        let names = Set(given.map(\.0))
        return settings.authorizeParameters.filter { !names.contains($0.0) } + given
    }

    func run() async throws {
        try await Session.run(common) { session in
            // A pushed request is a network call even for --print-url, so its endpoint may come from the issuer.
            let client = try await session.client(discover: !printURL || pushes || fapi2, dpop: dpop.settings, configure: configureRequest)
            guard client.configuration.authorizationEndpoint != nil else {
                throw UsageError(
                    "the authorization endpoint is needed: --authorize-url (or OAUTH2_AUTHORIZE_URL), or --issuer whose metadata names it")
            }
            let parameters = try additionalParameters(session.settings)
            if printURL {
                let pending = try await client.authorizationURL(redirectURI: session.settings.redirectURI, additionalParameters: parameters)
                StandardOutput.line(pending.url.absoluteString)
                return
            }
            let token: AccessToken
            if listen {
                token = try await authorizeWithListener(client, redirectURI: session.settings.redirectURI, parameters: parameters)
            } else {
                token = try await authorizeByPasting(client, redirectURI: session.settings.redirectURI, parameters: parameters)
            }
            StandardError.line("Signed in. " + TokenSummary(token, account: client.account).sentence)
        }
    }

    private func authorizeByPasting(_ client: OAuth2Client, redirectURI: URL, parameters: [(String, String)]) async throws -> AccessToken {
        let pending = try await client.authorizationURL(redirectURI: redirectURI, additionalParameters: parameters)
        let pasted = try PastedRedirectHandler.paste(after: pending.url, redirectURI: redirectURI, formPost: true)
        StandardError.line("Exchanging the code for a token…")
        // A provider that posts its answer (response_mode=form_post, Sign in
        // with Apple) leaves a form body to paste, not a URL.
        if !pasted.contains("://"), pasted.contains("state=") {
            return try await client.authenticate(.authorizationCode(formPost: try FormPostResponse(body: pasted)))
        }
        return try await client.authenticate(.authorizationCode(redirect: pasted))
    }

    private func authorizeWithListener(_ client: OAuth2Client, redirectURI: URL, parameters: [(String, String)]) async throws
        -> AccessToken
    {
        let receiver = try Self.receiver(for: redirectURI)
        let pending = try await client.authorizationURL(redirectURI: receiver.redirectURI, additionalParameters: parameters)
        StandardOutput.line(pending.url.absoluteString)
        StandardError.line("Open the URL above in a browser and sign in.")
        StandardError.line(
            "Waiting for the browser to come back to \(receiver.redirectURI.absoluteString) (up to \(listenTimeout) s; Ctrl-C to give up)…")
        let redirect = try await waitForBrowser(receiver, pending: pending)
        StandardError.line("The browser came back. Exchanging the code for a token…")
        return try await client.authenticate(.authorizationCode(redirect: redirect, pending: pending))
    }

    /// The redirect, saying now and then how long the wait may still last.
    private func waitForBrowser(_ receiver: LoopbackReceiver, pending: PendingAuthorization) async throws -> URL {
        let timeout = Duration.seconds(listenTimeout)
        let reporter = Self.reportProgress(until: ContinuousClock.now + timeout)
        defer { reporter.cancel() }
        do {
            return try await receiver.redirect(for: pending, timeout: timeout)
        } catch  where error.code == .timeout {
            throw OAuth2Error(
                code: .timeout,
                message: error.message + "; run the command again and finish signing in sooner (or raise --listen-timeout)"
            )
        }
    }

    /// The receiver for `--listen`; a redirect URI it cannot listen on is the caller's mistake.
    private static func receiver(for redirectURI: URL) throws -> LoopbackReceiver {
        // Through Result: a do/catch around this typed-throwing initializer
        // crashes Swift 6.3.1 (signal 11 in MandatoryAllocBoxToStack).
        let receiver = Result { () throws(OAuth2Error) -> LoopbackReceiver in
            try LoopbackReceiver(redirectURI: redirectURI, applicationName: "oauth2")
        }
        switch receiver {
        case .success(let receiver):
            return receiver
        case .failure(let error) where error.code == .invalidConfiguration:
            throw UsageError(
                "--listen needs an http redirect URI on 127.0.0.1 (or [::1], localhost), such as \(Settings.defaultRedirectURI); \(error.message)"
            )
        case .failure(let error):
            throw error
        }
    }

    /// Says now and then how long the wait for the browser may still last.
    private static func reportProgress(until deadline: ContinuousClock.Instant) -> Task<Void, Never> {
        Task {
            while true {
                do {
                    try await Task.sleep(for: .seconds(30))
                } catch {
                    return
                }
                let left = deadline - .now
                guard left > .zero else { return }
                StandardError.line("Still waiting for the browser (\(left.components.seconds) s left)…")
            }
        }
    }
}
