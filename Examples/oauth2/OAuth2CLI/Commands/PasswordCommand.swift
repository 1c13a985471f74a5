import ArgumentParser
import OAuth2

/// `oauth2 password`: the resource owner password grant (RFC 6749 §4.3).
struct PasswordCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "password",
        abstract: "Sign in with a username and password (deprecated grant) and store the token.",
        discussion: """
            The password is asked for on the terminal with echo off, or read from
            the first line of stdin with --password-stdin. It is sent once and never
            stored. RFC 9700 deprecates this grant; use it only with a provider you
            control that offers nothing better.

            Example:
              printf '%s\\n' "$PASSWORD" | oauth2 password --token-url https://id.example/token \\
                  --client-id cli --client-secret-file secret.txt --username alice --password-stdin
            """
    )

    @OptionGroup var common: CommonOptions

    @OptionGroup var dpop: DPoPOptions

    @Option(help: "The resource owner's username.")
    var username: String

    @Flag(name: .customLong("password-stdin"), help: "Read the password from the first line of stdin instead of asking.")
    var passwordStdin = false

    func run() async throws {
        try await Session.run(common) { session in
            let client = try await session.client(allowsPasswordGrant: true, dpop: dpop.settings)
            let password: Secret
            if passwordStdin {
                guard let line = StandardInput.readLine(limit: PasswordPrompt.limit), !line.isEmpty else {
                    throw OAuth2Error(code: .invalidRequest, message: "no password on stdin")
                }
                password = Secret(line)
            } else {
                password = try PasswordPrompt.read(prompt: "Password for \(username): ")
            }
            let token = try await client.authenticate(.password(username: username, password: password))
            StandardError.line("Signed in. " + TokenSummary(token, account: client.account).sentence)
        }
    }
}
