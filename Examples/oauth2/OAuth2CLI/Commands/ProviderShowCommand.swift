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

            A provider "oauth2 call" or "oauth2 register" saved shows what was
            discovered and registered: "resources" (the protected resources found
            behind the authorization server, RFC 9728), "client_metadata_url" (the
            client ID metadata document used as the client id), "registration"
            (RFC 7591: when it was issued, where it is managed, whether a client
            secret and a registration access token are kept; those secrets stay
            sealed in the token store and are never shown).

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

    /// The preset's notes, or what a person should know about a provider the CLI saved by itself.
    private func notes(_ provider: ResolvedProvider) -> [String] {
        if let preset = provider.preset { return preset.notes }
        guard DiscoveredProvider.isDiscovered(provider.record) else { return [] }
        var notes = ["Saved by oauth2 call or oauth2 register from the authorization server's metadata; oauth2 call uses it by itself."]
        if provider.record.registration != nil {
            notes.append("The client was registered dynamically (RFC 7591); its secrets are kept sealed in the token store.")
        }
        if provider.record.clientMetadataURL != nil {
            notes.append("The client id is a client ID metadata document's URL.")
        }
        return notes
    }

    func run() throws {
        let provider = try ResolvedProvider.resolve(name, tenant: tenant, gitlabURL: gitlabURL)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        let shown = Shown(name: provider.name, saved: provider.isSaved, settings: provider.record, notes: notes(provider))
        StandardOutput.line(String(decoding: try encoder.encode(shown), as: UTF8.self))
    }
}
