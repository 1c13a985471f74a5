import Foundation
import OAuth2
import Testing

/// The built `oauth2` binary, run the way a person runs it, with a token
/// store of its own in a fresh temporary directory.
final class CLI {
    /// The temporary directory; removed when the value is released.
    let directory: String
    /// The token store directory passed as `--store` (created by the CLI, mode 0700).
    var store: String
    /// The environment every run gets: the test process's, without any `OAUTH2_*`
    /// variable, so a developer's own settings cannot leak in.
    var environment: [String: String]

    init() throws {
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("oauth2-it-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: base, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        directory = base
        store = base + "/store"
        environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("OAUTH2_") }
    }

    deinit {
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// The path of the `oauth2` binary: `OAUTH2_IT_BINARY`, else the one built next to the tests.
    static func binary() throws -> String {
        let environment = ProcessInfo.processInfo.environment
        if let path = environment["OAUTH2_IT_BINARY"], !path.isEmpty { return path }
        let testBinary = Bundle.main.executableURL ?? URL(fileURLWithPath: CommandLine.arguments[0])
        var directory = testBinary.deletingLastPathComponent()
        for _ in 0..<4 {
            let candidate = directory.appendingPathComponent("oauth2").path
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
            directory = directory.deletingLastPathComponent()
        }
        throw ProviderError(
            description: "the oauth2 binary was not found next to the tests; build it (swift build) or set OAUTH2_IT_BINARY")
    }

    /// Runs `oauth2 arguments…` to its end.
    func run(_ arguments: [String], input: String? = nil, environment extra: [String: String] = [:], timeout: Duration = .seconds(60))
        async throws -> Subprocess.Result
    {
        try await Subprocess.run(
            try Self.binary(), arguments, environment: environment.merging(extra) { $1 }, input: input, timeout: timeout)
    }

    /// Starts `oauth2 arguments…` and returns it running.
    func start(_ arguments: [String], environment extra: [String: String] = [:]) throws -> Subprocess {
        try Subprocess(try Self.binary(), arguments, environment: environment.merging(extra) { $1 })
    }

    /// Writes a file (mode 0600) into the temporary directory and returns its path.
    func writeFile(_ name: String, _ content: String) throws -> String {
        let path = directory + "/" + name
        try Data(content.utf8).write(to: URL(fileURLWithPath: path))
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
        return path
    }

    /// The token the CLI stored for `account`, read through the framework's store.
    func storedToken(account: String = "default") async throws -> AccessToken? {
        try await FileTokenStore(directory: store).load(account: account)
    }

    /// Makes the token stored for `account` expired on both sides, without
    /// waiting: its stored expiry an hour back, and its end at `provider`
    /// (its refresh token stays usable). Returns the token as it was.
    func expireStoredToken(account: String = "default", at provider: Provider) async throws -> AccessToken {
        let token = try #require(try await storedToken(account: account))
        var expired = token
        expired.expiresAt = Date().addingTimeInterval(-3600)
        try await FileTokenStore(directory: store).save(expired, account: account)
        try await provider.expireAccessToken(token.accessToken)
        return token
    }
}

extension Provider {
    /// How a test hands the client secret to the CLI.
    enum SecretDelivery {
        case file
        case environment
    }

    /// The common options for one of the provider's clients: its endpoints,
    /// its id, its secret (a file by default; none for public clients) and the CLI's store.
    func options(client name: String, for cli: CLI, secret: SecretDelivery = .file, endpoints: Bool = true) throws -> [String] {
        let client = try client(name)
        var options = ["--client-id", client.clientID, "--store", cli.store]
        if endpoints {
            options += [
                "--authorize-url", self.endpoints.authorize,
                "--token-url", self.endpoints.token,
                "--revoke-url", self.endpoints.revoke,
                "--device-url", self.endpoints.deviceAuthorization,
            ]
        }
        if !client.clientSecret.isEmpty {
            switch secret {
            case .file:
                options += ["--client-secret-file", try cli.writeFile("\(name).secret", client.clientSecret + "\n")]
            case .environment:
                cli.environment["OAUTH2_CLIENT_SECRET"] = client.clientSecret
            }
        }
        return options
    }

    /// Runs `oauth2 authorize` as a person does: reads the URL, signs in with the
    /// scripted browser, pastes the redirect, and returns how the command ended.
    ///
    /// - Parameter redirect: changes the redirect before it is pasted (to test refusals).
    func authorize(
        with cli: CLI,
        options: [String],
        username: String = "alice",
        deny: Bool = false,
        redirect change: (String) -> String = { $0 }
    ) async throws -> (result: Subprocess.Result, url: String, redirect: String) {
        let command = try cli.start(["authorize"] + options)
        let url = try await command.firstLineOfStdout()
        let redirect = try await browse(url, username: username, deny: deny)
        command.write(change(redirect) + "\n")
        command.closeInput()
        return (try await command.wait(), url, redirect)
    }
}
