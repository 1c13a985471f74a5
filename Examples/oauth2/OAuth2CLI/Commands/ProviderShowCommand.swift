import ArgumentParser

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// `oauth2 provider show NAME`.
struct ProviderShowCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show",
        abstract: "Show a saved provider's or a preset's settings as JSON.",
        discussion: """
            Prints one JSON object: the settings of the saved provider over its
            preset's, or the preset's alone ("saved": false). Nothing is fetched.
            The client secret is never shown: there is none saved, only the path
            of its file or the name of its variable.

            Example:
              oauth2 provider show github
              oauth2 provider show microsoft --tenant contoso.onmicrosoft.com
            """
    )

    @Argument(help: "A saved provider's name, or a preset's.")
    var name: String

    @Option(help: "The Microsoft Entra ID tenant (for the microsoft preset).")
    var tenant: String?

    @Option(name: .customLong("gitlab-url"), help: "A self-hosted GitLab's URL (for the gitlab preset).")
    var gitlabURL: String?

    struct Shown: Encodable {
        let name: String
        let saved: Bool
        let settings: ProviderRecord
        let notes: [String]
    }

    func run() throws {
        let provider = try ResolvedProvider.resolve(name, tenant: tenant, gitlabURL: gitlabURL)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        let shown = Shown(name: provider.name, saved: provider.isSaved, settings: provider.record, notes: provider.preset?.notes ?? [])
        StandardOutput.line(String(decoding: try encoder.encode(shown), as: UTF8.self))
    }
}
