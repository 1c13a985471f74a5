import ArgumentParser
import OAuth2

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// `oauth2 userinfo`: what the OpenID provider says about the signed-in user.
struct UserinfoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "userinfo",
        abstract: "Ask the OpenID provider's userinfo endpoint about the signed-in user.",
        discussion: """
            Needs --issuer (an OpenID provider, whose configuration names the userinfo
            endpoint) and a token signed in with the openid scope. Prints the claims as
            one JSON object. The answer's sub must be the ID token's, or the command
            fails with subject_mismatch.

            Example:
              oauth2 userinfo --issuer https://accounts.google.com --client-id my-app
            """
    )

    @OptionGroup var common: CommonOptions

    func run() async throws {
        try await Session.run(common) { session in
            let info = try await session.client().userInfo()
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            StandardOutput.line(String(decoding: try encoder.encode(info.claims), as: UTF8.self))
        }
    }
}
