import ArgumentParser

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// `oauth2 provider list`.
struct ProviderListCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List the saved providers (and, with --presets, the presets).",
        discussion: """
            One line per provider: its name, then its preset or token endpoint.
            --json prints {"providers": {NAME: settings}} as saved.

            Example:
              oauth2 provider list
            """
    )

    @Flag(help: "Print the saved providers as JSON.")
    var json = false

    @Flag(help: "List the presets too.")
    var presets = false

    func run() throws {
        let file = try ProviderFile.load()
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            StandardOutput.line(String(decoding: try encoder.encode(["providers": file.providers]), as: UTF8.self))
            return
        }
        for (name, record) in file.providers.sorted(by: { $0.key < $1.key }) {
            let what = record.preset.map { "preset \($0)" } ?? record.tokenURL ?? record.issuer.map { "issuer \($0)" } ?? ""
            StandardOutput.line("\(name)\t\(what)")
        }
        if presets {
            for preset in Preset.allCases {
                StandardOutput.line("\(preset.rawValue)\t(preset)")
            }
        }
    }
}
