import ArgumentParser

/// `oauth2 provider remove NAME`.
struct ProviderRemoveCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "remove",
        abstract: "Remove a saved provider (its tokens stay in the store: oauth2 logout --provider NAME first to drop them).",
        discussion: """
            Example:
              oauth2 logout --provider work && oauth2 provider remove work
            """
    )

    @Argument(help: "The saved provider's name.")
    var name: String

    func run() throws {
        var file = try ProviderFile.load()
        guard file.providers.removeValue(forKey: name) != nil else {
            throw UsageError("no provider named \(name) is saved")
        }
        try file.save()
        StandardError.line("Removed the provider \(name).")
    }
}
