import ArgumentParser
import OAuth2

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// `oauth2 logout`: forget the token, revoking it when the provider allows.
struct LogoutCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "logout",
        abstract: "Delete the token here, revoking it at the provider when possible.",
        discussion: """
            Unlike "revoke", a provider that cannot be reached or refuses is not an
            error (--verbose shows it), and neither is having no token: only failing
            to delete the stored token is.

            With an OpenID provider (--issuer) that has an end-session endpoint, the
            RP-initiated logout URL is printed on stdout: open it in the browser to
            end the session at the provider too. It carries the ID token as
            id_token_hint; --post-logout-redirect-uri and --state are added when given.

            Example:
              oauth2 logout --revoke-url https://id.example/revoke --token-url https://id.example/token --client-id my-app
            """
    )

    @OptionGroup var common: CommonOptions

    @Option(
        name: .customLong("post-logout-redirect-uri"), help: "Where the provider sends the browser after its logout (registered with it).")
    var postLogoutRedirectURI: String?

    @Option(help: "A state for the end-session request, returned with the post-logout redirect.")
    var state: String?

    func run() async throws {
        try await Session.run(common) { session in
            let client = try await session.client()
            var redirect: URL?
            if let postLogoutRedirectURI {
                guard let url = URL(string: postLogoutRedirectURI), url.scheme != nil else {
                    throw UsageError("--post-logout-redirect-uri is not an absolute URL")
                }
                redirect = url
            }
            // Built before the sign-out, which deletes the ID token it carries.
            let endSession = try await client.endSessionURL(postLogoutRedirectURI: redirect, state: state)
            try await client.logout()
            StandardError.line("Signed out (account \(client.account)).")
            if let endSession {
                StandardError.line("To end the session at the provider too, open:")
                StandardOutput.line(endSession.absoluteString)
            }
        }
    }
}
