import ArgumentParser

/// `oauth2 provider`: the saved providers (`providers.json` in the configuration directory).
struct ProviderCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "provider",
        abstract: "Save, list, show and remove providers, for --provider NAME.",
        discussion: """
            A saved provider is a name for a provider's settings, kept in
            providers.json in the configuration directory ($OAUTH2_CONFIG_DIR, else
            $XDG_CONFIG_HOME/oauth2, else ~/.config/oauth2; the file mode 0600, the
            directory 0700, written atomically). Then --provider NAME (or
            OAUTH2_PROVIDER) on any command fills the settings: a flag wins, then an
            OAUTH2_* variable, then the saved provider, then its preset.

            The presets github, google, microsoft (--tenant) and gitlab (--gitlab-url)
            work as --provider NAME without saving anything, unless a saved provider
            has that name; "provider add NAME --preset github" saves one on top of a
            preset (your client id, your scopes).

            The client secret is never saved: only the path of a file holding it
            (--client-secret-file) or the name of an environment variable holding it
            (--client-secret-env). Tokens of a provider are kept under the account
            named after it, unless --account says otherwise.

            Example:
              oauth2 provider add work --preset microsoft --tenant contoso.onmicrosoft.com --client-id 1111-…
              oauth2 provider add local --token-url http://127.0.0.1:8000/o/token/ \\
                  --client-id cli --client-secret-file ~/.cli-secret
              oauth2 provider list
              oauth2 authorize --provider work --listen
            """,
        subcommands: [ProviderAddCommand.self, ProviderListCommand.self, ProviderShowCommand.self, ProviderRemoveCommand.self]
    )
}
