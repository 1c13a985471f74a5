import ArgumentParser
import OAuth2

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// `oauth2`: the framework's example, and a tool for scripts.
///
/// Built twice: `oauth2` (Examples/oauth2/oauth2) without a database driver,
/// so it starts without SwiftNIO or full Foundation, and `oauth2-postgres`,
/// which adds the PostgreSQL store. `oauth2` hands a command with a PostgreSQL
/// store to `oauth2-postgres` beside it (``TokenDatabases``).
package struct OAuth2Command: AsyncParsableCommand {
    static let version = "0.1.0"

    package init() {}

    package static let configuration = CommandConfiguration(
        commandName: "oauth2",
        abstract: "Get, keep and use OAuth 2.0 access tokens.",
        discussion: """
            Every command takes the common options below; each also comes from an
            OAUTH2_* environment variable (the flag wins). The client secret comes
            from --client-secret-file or OAUTH2_CLIENT_SECRET, never from a flag
            value; without one the client is public. Tokens are kept in the store
            directory, one file per --account, encrypted when OAUTH2_STORE_KEY holds
            a 256-bit key (64 hex digits).

            Saved providers and presets: --provider NAME (or OAUTH2_PROVIDER) takes
            the settings of a provider saved with "oauth2 provider add", or of a
            preset (github, google, microsoft with --tenant, gitlab with
            --gitlab-url); flags and variables still win. Its tokens are kept under
            an account named after it. The configuration directory is
            $OAUTH2_CONFIG_DIR, else $XDG_CONFIG_HOME/oauth2, else ~/.config/oauth2.

            From a URL alone: "oauth2 call URL" with no provider configured finds
            the resource's authorization server (RFC 9728), identifies itself (a
            client ID metadata document with --client-metadata-url, or a dynamic
            registration), signs in and keeps what it learned as a provider named
            after the server; "oauth2 register" registers explicitly (RFC 7591).

            Credential helpers: "oauth2 git-credential" is a git credential helper;
            "oauth2 token --format kubernetes" is a kubectl exec credential plugin.

            Shell completions: oauth2 --generate-completion-script bash (or zsh,
            fish) prints a script for every command and option (--provider
            completes to the saved providers and the presets); see the README, e.g.
              oauth2 --generate-completion-script bash > ~/.oauth2-completion.bash

            Output: results on stdout, messages on stderr, no color. The device
            flow's countdown is drawn only on a terminal and without NO_COLOR.

            Exit status: 0 on success, 64 on a usage error, 1 on any other failure,
            with "error: <code>: <message>" on stderr.

            Example:
              oauth2 provider add gh --preset github --client-id Iv1.0123456789abcdef \\
                  --scope "repo read:user"
              oauth2 device --provider gh
              oauth2 call --provider gh https://api.github.com/user

              export OAUTH2_AUTHORIZE_URL=https://github.com/login/oauth/authorize
              export OAUTH2_TOKEN_URL=https://github.com/login/oauth/access_token
              export OAUTH2_CLIENT_ID=Iv1.0123456789abcdef OAUTH2_CLIENT_SECRET_FILE=~/.github-secret
              oauth2 authorize --listen --scope "read:user"
              oauth2 call https://api.github.com/user
            """,
        version: version,
        subcommands: [
            AuthorizeCommand.self,
            PasswordCommand.self,
            ClientCredentialsCommand.self,
            DeviceCommand.self,
            RefreshCommand.self,
            TokenCommand.self,
            CallCommand.self,
            UserinfoCommand.self,
            RevokeCommand.self,
            LogoutCommand.self,
            RegisterCommand.self,
            ProviderCommand.self,
            GitCredentialCommand.self,
        ]
    )

    /// Runs the command and turns every failure into one `error:` line and the
    /// exit status of DESIGN.md §7.
    package static func runCommandLine() async {
        let status: Int32
        var commandName = "oauth2"
        do {
            var command = try parseCommandLine()
            if let name = type(of: command).configuration.commandName, name != "oauth2" {
                commandName = "oauth2 \(name)"
            }
            if var command = command as? any AsyncParsableCommand {
                try await command.run()
            } else {
                try command.run()
            }
            status = 0
        } catch {
            status = report(error, commandName: commandName)
        }
        Process.terminate(status)
    }

    /// The command line, parsed: the subcommand it names, parsed on its own
    /// when that succeeds, else the whole tree.
    ///
    /// Parsing from the root builds the argument set of every command (and
    /// looks for a completion-script request in all of them): 16.7 M
    /// instructions for `oauth2 token --print-access-token`, against 12.7 M
    /// for the token command alone (callgrind), most of either the runtime's
    /// conformance scans. A subcommand parsed
    /// alone gives the same command for every command line it accepts.
    /// Whatever it refuses (a mistake, `--help`, `--version`, a completion
    /// request) is parsed again from the root, so messages, help and exit
    /// statuses stay the root's.
    private static func parseCommandLine() throws -> any ParsableCommand {
        let arguments = Array(CommandLine.arguments.dropFirst())
        if let name = arguments.first,
            let subcommand = configuration.subcommands.first(where: { $0.configuration.commandName == name }),
            let command = try? subcommand.parseAsRoot(Array(arguments.dropFirst()))
        {
            return command
        }
        return try parseAsRoot(arguments)
    }

    /// Prints what went wrong and returns the exit status.
    private static func report(_ error: any Error, commandName: String) -> Int32 {
        switch error {
        case let error as OAuth2Error:
            StandardError.error(code: error.code.rawValue, message: error.message)
            return 1
        case let error as UsageError:
            StandardError.error(code: "usage", message: error.message)
            StandardError.line("See '\(commandName) --help'.")
            return ExitCode.validationFailure.rawValue
        default:
            let code = exitCode(for: error)
            if code == .success {
                // --help and --version: the parser prints them as usual.
                exit(withError: error)
            }
            if code == .validationFailure {
                var lines = fullMessage(for: error).split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
                if let first = lines.first {
                    lines[0] = "error: usage: " + (first.hasPrefix("Error: ") ? String(first.dropFirst(7)) : first)
                }
                StandardError.line(lines.joined(separator: "\n").trimmingSuffixNewlines)
                return code.rawValue
            }
            let message = message(for: error)
            if !message.isEmpty {
                StandardError.error(code: "failed", message: message)
            }
            return code.rawValue
        }
    }
}

/// Ends the process: the name `exit` is taken by the parser's own in a command's scope.
private enum Process {
    static func terminate(_ status: Int32) -> Never {
        #if canImport(Darwin)
        Darwin.exit(status)
        #else
        Glibc.exit(status)
        #endif
    }
}

extension String {
    fileprivate var trimmingSuffixNewlines: String {
        var text = self
        while text.hasSuffix("\n") { text.removeLast() }
        return text
    }
}
