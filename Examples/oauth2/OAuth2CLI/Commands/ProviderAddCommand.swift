import ArgumentParser
import OAuth2

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// `oauth2 provider add NAME …`.
struct ProviderAddCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add",
        abstract: "Save a provider's settings under a name (never its client secret).",
        discussion: """
            Only the settings given are saved; the others come from the preset
            (--preset) or from flags and variables when the provider is used. A
            name already saved is refused unless --force. The secret file's path is
            saved as an absolute path. --webfinger finds the issuer from your
            account's identifier (user@host, or a URL) by WebFinger (OpenID Connect
            Discovery 1.0 §2) and saves it as --issuer would.

            Example:
              oauth2 provider add gh --preset github --client-id Iv1.0123456789abcdef --scope "repo read:user"
              oauth2 provider add corp --issuer https://id.corp.example --client-id cli \\
                  --client-secret-env CORP_CLIENT_SECRET --git-host git.corp.example
              oauth2 provider add work --webfinger me@corp.example --client-id cli
            """
    )

    @Argument(help: "The name: letters, digits, '.', '_' or '-'.")
    var name: String

    @Option(help: "The preset under it: github, google, microsoft or gitlab.", completion: .list(Preset.allCases.map(\.rawValue)))
    var preset: String?

    @Option(help: "The Microsoft Entra ID tenant (with --preset microsoft).")
    var tenant: String?

    @Option(name: .customLong("gitlab-url"), help: "A self-hosted GitLab's URL (with --preset gitlab).")
    var gitlabURL: String?

    @Option(name: .customLong("client-id"), help: "The client identifier.")
    var clientID: String?

    @Option(name: .customLong("authorize-url"), help: "The authorization endpoint.")
    var authorizeURL: String?

    @Option(name: .customLong("token-url"), help: "The token endpoint.")
    var tokenURL: String?

    @Option(name: .customLong("revoke-url"), help: "The revocation endpoint.")
    var revokeURL: String?

    @Option(name: .customLong("device-url"), help: "The device authorization endpoint.")
    var deviceURL: String?

    @Option(help: "The issuer (OpenID Connect or RFC 8414 discovery).")
    var issuer: String?

    @Option(
        name: .customLong("webfinger"),
        help: "Find the issuer by WebFinger from an account identifier (user@host, acct:user@host, or a URL) instead of --issuer.")
    var webFinger: String?

    @Option(
        name: .customLong("ca-file"),
        help: "A PEM file of certificate authorities to trust for the --webfinger request instead of the system's (OAUTH2_CA_FILE).")
    var caFile: String?

    @Option(help: "The scopes, space-separated.")
    var scope: String?

    @Option(name: .customLong("redirect-uri"), help: "The redirect URI registered with the provider.")
    var redirectURI: String?

    @Option(name: .customLong("client-secret-file"), help: "A file holding the client secret: its path is saved, not the secret.")
    var clientSecretFile: String?

    @Option(
        name: .customLong("client-secret-env"),
        help: "An environment variable holding the client secret: its name is saved, not the secret.")
    var clientSecretEnv: String?

    @Option(name: .customLong("client-secret"), help: .hidden)
    var refusedClientSecret: String?

    @Option(name: .customLong("auth-method"), help: "How the client authenticates.")
    var authMethod: AuthMethod?

    @Option(help: "An audience parameter.")
    var audience: String?

    @Option(name: .customLong("param"), help: "An extra authorize URL parameter, NAME=VALUE; repeat for more.")
    var parameters: [String] = []

    @Option(
        name: .customLong("git-host"),
        help: "The git host (host or host:port, https unless written http://) oauth2 git-credential answers for.")
    var gitHost: String?

    @Option(name: .customLong("git-username"), help: "The username oauth2 git-credential answers with (default oauth2).")
    var gitUsername: String?

    @Flag(help: "Replace a provider already saved under the name.")
    var force = false

    func validate() throws {
        if refusedClientSecret != nil {
            throw ValidationError(
                "a client secret is never saved in the configuration: put it in a file (--client-secret-file PATH) or an environment variable (--client-secret-env NAME)"
            )
        }
        guard ProviderFile.isValidName(name) else {
            throw ValidationError(
                "the provider name must be letters, digits, '.', '_' or '-' (at most 64), starting with a letter or digit")
        }
        if let preset, Preset(named: preset) == nil {
            throw ValidationError("--preset must be one of \(Preset.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        if clientSecretFile != nil && clientSecretEnv != nil {
            throw ValidationError("--client-secret-file and --client-secret-env cannot be combined")
        }
        if preset == nil && tokenURL == nil && issuer == nil && webFinger == nil {
            throw ValidationError("give --token-url, --issuer or --webfinger, or --preset")
        }
        if webFinger != nil && issuer != nil {
            throw ValidationError("--webfinger finds the issuer: it cannot be combined with --issuer")
        }
        for (option, value) in [
            ("--authorize-url", authorizeURL), ("--token-url", tokenURL), ("--revoke-url", revokeURL), ("--device-url", deviceURL),
            ("--redirect-uri", redirectURI),
        ] {
            if let value, URL(string: value)?.scheme == nil || URL(string: value)?.host == nil {
                throw ValidationError("\(option) is not an absolute URL")
            }
        }
        for parameter in parameters where !parameter.contains("=") || parameter.hasPrefix("=") {
            throw ValidationError("--param must be NAME=VALUE")
        }
    }

    func run() async throws {
        var file = try ProviderFile.load()
        if file.providers[name] != nil && !force {
            throw UsageError("a provider named \(name) is saved already: oauth2 provider remove \(name), or add --force")
        }
        var issuer = issuer
        if let webFinger {
            issuer = try await Self.issuer(byWebFinger: webFinger, caFile: caFile ?? EnvironmentVariables.value("OAUTH2_CA_FILE"))
            StandardError.line("WebFinger: the issuer is \(issuer ?? "")")
        }
        var record = ProviderRecord()
        record.preset = preset.flatMap { Preset(named: $0)?.rawValue }
        record.tenant = tenant
        record.gitlabURL = gitlabURL
        if let preset = record.preset.flatMap(Preset.init(named:)) {
            // Checks --tenant and --gitlab-url now rather than at first use.
            _ = try preset.record(tenant: tenant, gitlabURL: gitlabURL)
        }
        record.clientID = clientID
        record.authorizeURL = authorizeURL
        record.tokenURL = tokenURL
        record.revokeURL = revokeURL
        record.deviceURL = deviceURL
        record.issuer = issuer
        record.scope = scope
        record.redirectURI = redirectURI
        record.clientSecretFile = clientSecretFile.map(Self.absolutePath)
        record.clientSecretEnv = clientSecretEnv
        record.authMethod = authMethod?.name
        record.audience = audience
        record.authorizeParameters = parameters.isEmpty ? nil : parameters
        record.gitHost = gitHost
        record.gitUsername = gitUsername
        if let path = record.clientSecretFile {
            do {
                _ = try SecretFile.load(path)
            } catch {
                StandardError.line("warning: \(error.message); it is saved anyway, and read when the provider is used")
            }
        }
        file.providers[name] = record
        try file.save()
        StandardError.line("Saved the provider \(name) in \(try ProviderFile.path()).")
    }

    /// The issuer of `identifier`'s OpenID provider. The person running the
    /// CLI typed the identifier for their own use, so a host on their own
    /// network (or loopback) may be asked, unlike on a server taking
    /// identifiers from its users.
    static func issuer(byWebFinger identifier: String, caFile: String?) async throws -> String {
        let transport = CurlTransport(configuration: CurlTransport.Configuration(caFile: caFile))
        do {
            let issuer = try await OpenIDIssuer.webFinger(
                identifier, rules: DiscoveryRules(allowsPrivateAuthorizationServers: true), transport: transport)
            await transport.shutdown()
            return issuer
        } catch {
            await transport.shutdown()
            throw error
        }
    }

    /// `path` from the working directory, for use from any other.
    static func absolutePath(_ path: String) -> String {
        if path.hasPrefix("/") { return path }
        if path == "~" || path.hasPrefix("~/"), let home = EnvironmentVariables.value("HOME") {
            return home + path.dropFirst()
        }
        var buffer = [CChar](repeating: 0, count: 4096)
        guard getcwd(&buffer, buffer.count) != nil else { return path }
        let directory = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return directory + "/" + (path.hasPrefix("./") ? String(path.dropFirst(2)) : path)
    }
}
