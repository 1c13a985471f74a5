import ArgumentParser
import OAuth2

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// `oauth2 git-credential get|store|erase`: a git credential helper
/// (gitcredentials(7)) that answers with the stored access token.
struct GitCredentialCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "git-credential",
        abstract: "A git credential helper that answers with the access token (refreshed as needed).",
        discussion: """
            git runs it with get, store or erase and key=value lines on stdin
            (gitcredentials(7)). It answers only for its host: --host (or
            OAUTH2_GIT_HOST), else the provider's git host (github.com for the
            github preset, the GitLab host for gitlab, --git-host of a saved
            provider). For any other protocol or host it prints nothing and exits 0,
            so git asks its next helper. A host without a scheme means https (or
            http for 127.0.0.1, [::1] and localhost); write http://host:port to
            allow plain http elsewhere.

            get: prints username=<--username, default oauth2, x-access-token for
            github> and password=<the access token>, refreshing it first when it is
            about to expire, and password_expiry_utc when the expiry is known. When
            git (2.46 or later) offers capability[]=authtype, it answers
            authtype=Bearer and credential=<the token> instead. Without a token (or
            when the refresh fails) it prints nothing on stdout and an error on
            stderr; sign in with "oauth2 authorize --provider …" (or device, …). The
            token never goes to stderr. A token bound to a DPoP key (a grant run
            with --dpop) is refused the same way: git would send it as a bearer
            token, without the proof it needs.

            store: does nothing (the token is in the store already).

            erase: git says the server rejected the credential. Only when the
            rejected password is the stored access token is anything done, under
            the account's lock (as a refresh is): the token is refreshed (a
            refresh token survives a revoked access token); a token of a grant
            that runs without the user (client credentials, an assertion grant)
            is renewed by running it again, and kept as it is when this
            configuration cannot run it (it is recoverable, by its grant, where it
            was obtained); any other token is deleted, as nothing can renew it.
            A password that is not the stored token (another helper's, an older
            token, or one another process replaced meanwhile) changes nothing, so
            a stray erase cannot sign you out.

            Example:
              git config --global credential.https://github.com.helper \\
                  '!oauth2 git-credential --provider github --client-id Iv1.0123456789abcdef'
              git config --global credential.https://git.corp.example.helper '!oauth2 git-credential --provider corp'
            """
    )

    enum Operation: String, ExpressibleByArgument, CaseIterable {
        case get, store, erase
    }

    @OptionGroup var common: CommonOptions

    @Argument(help: "What git asks: get, store or erase.")
    var operation: Operation

    @Option(help: "The git host answered for: host, host:port or http(s)://host[:port] (OAUTH2_GIT_HOST; default the provider's).")
    var host: String?

    @Option(help: "The username answered with (OAUTH2_GIT_USERNAME; default the provider's, else oauth2).")
    var username: String?

    /// The most git's request may hold.
    static let inputLimit = 64 * 1024

    func run() async throws {
        let request = Self.readRequest()
        guard operation != .store else { return }
        try await Session.run(common) { session in
            guard let spec = host ?? EnvironmentVariables.value("OAUTH2_GIT_HOST") ?? session.settings.gitHost else {
                throw UsageError("no git host: give --host (or OAUTH2_GIT_HOST), or a --provider with a git host")
            }
            guard Self.matches(spec, protocol: request["protocol"], host: request["host"]) else { return }
            switch operation {
            case .get:
                try await get(session, request: request)
            case .erase:
                try await erase(session, request: request)
            case .store:
                return
            }
        }
    }

    private func get(_ session: Session, request: [String: String]) async throws {
        let client = try await session.client()
        let token: AccessToken
        do {
            token = try await client.token()
        } catch {
            throw Self.withSignInHint(error, provider: session.settings.provider?.name)
        }
        try TokenSummary.refuseBoundToken(token, to: "git")
        var lines: [String] = []
        if request.capabilities.contains("authtype") {
            lines += ["capability[]=authtype", "authtype=Bearer", "credential=\(token.accessToken.value)"]
        } else {
            let name = username ?? EnvironmentVariables.value("OAUTH2_GIT_USERNAME") ?? session.settings.gitUsername ?? "oauth2"
            lines += ["username=\(name)", "password=\(token.accessToken.value)"]
        }
        if let expiresAt = token.expiresAt, let seconds = Self.unixSeconds(expiresAt) {
            lines.append("password_expiry_utc=\(seconds)")
        }
        StandardOutput.line(lines.joined(separator: "\n"))
    }

    /// What git's erase does to the stored token it names; see the command's
    /// discussion. Everything that changes the store goes through the client,
    /// under the account's lock and only while the store still holds the
    /// rejected token, so a token another process stored meanwhile stays.
    private func erase(_ session: Session, request: [String: String]) async throws {
        guard let rejected = request["password"] ?? request["credential"] else { return }
        let account = session.settings.account
        guard let stored = try await session.storeForReading().load(account: account), stored.accessToken.value == rejected else {
            return
        }
        let client = try await session.client()
        if stored.refreshToken == nil, let grant = stored.grant, Self.grantsWithoutUser.contains(grant.type),
            !Self.canRun(grant, client.configuration)
        {
            // Deleting it would lose the record of how to renew it; the
            // program that obtained it can, on its own next 401.
            StandardError.line(
                "warning: the server rejected the token of account \(account); it was obtained by the "
                    + "\(OAuth2Error.sanitize(String(grant.type.prefix(100)))) grant, which this configuration cannot run again, so it is kept"
            )
            return
        }
        session.logger.debug("git says the server rejected the stored access token; replacing it")
        do {
            _ = try await client.token(replacing: stored)
        } catch {
            // invalid_grant, or a rejected token nothing can renew, has deleted
            // it already; anything else (the provider unreachable) leaves it
            // for the next get to retry.
            session.logger.debug("no token replaced the rejected one: \(error.code.rawValue)")
        }
    }

    /// Grants that obtain a token without the user, so a token of theirs is
    /// renewed by running the grant again, never by signing in: client
    /// credentials and the assertion grants (RFC 7521).
    static let grantsWithoutUser: Set<String> = [
        TokenGrant.clientCredentialsType, TokenGrant.jwtBearerType, "urn:ietf:params:oauth:grant-type:saml2-bearer",
    ]

    /// Whether `configuration` can run `grant` again (the framework renews with it then).
    static func canRun(_ grant: TokenGrant, _ configuration: OAuth2Configuration) -> Bool {
        if grant.type == TokenGrant.clientCredentialsType { return configuration.clientAuthentication != .none }
        return configuration.assertionGrant?.type == grant.type
    }

    /// `password_expiry_utc`'s value: whole seconds since 1970, clamped to
    /// 1970 (git then drops the expired password) and the end of year 9999;
    /// `nil` for no number. A token file may hold any date, and `Int(_:)`
    /// traps on what does not fit.
    static func unixSeconds(_ date: Date) -> Int? {
        let seconds = date.timeIntervalSince1970.rounded(.down)
        guard !seconds.isNaN else { return nil }
        return Int(min(max(0, seconds), 253_402_300_799))
    }

    /// A missing or lost token's error, saying how to sign in.
    private static func withSignInHint(_ error: OAuth2Error, provider: String?) -> OAuth2Error {
        guard error.code == .notAuthenticated || error.code == .reauthorizationRequired else { return error }
        let option = provider.map { " --provider \($0)" } ?? ""
        return OAuth2Error(
            code: error.code, message: error.message + "; sign in first, e.g. oauth2 authorize\(option) (or oauth2 device\(option))")
    }

    /// Whether `spec` (host, host:port, or a URL of them) is the host git names.
    static func matches(_ spec: String, protocol given: String?, host: String?) -> Bool {
        guard let given = given?.lowercased(), let host = host?.lowercased() else { return false }
        var text = spec.lowercased()
        var scheme: String?
        for prefix in ["https://", "http://"] where text.hasPrefix(prefix) {
            scheme = String(prefix.dropLast(3))
            text.removeFirst(prefix.count)
        }
        while text.hasSuffix("/") { text.removeLast() }
        guard text == host else { return false }
        if let scheme { return given == scheme }
        let name = host.hasPrefix("[") ? String(host.prefix { $0 != "]" }) + "]" : String(host.prefix { $0 != ":" })
        return given == "https" || (given == "http" && Preset.isLoopback(name))
    }

    /// git's request: `key=value` lines until a blank line or the end of
    /// input; a key that repeats (`capability[]`) keeps every value, joined by newlines.
    static func readRequest() -> [String: String] {
        var request: [String: String] = [:]
        var total = 0
        while total < inputLimit, let line = StandardInput.readLine(limit: inputLimit) {
            total += line.utf8.count + 1
            if line.isEmpty { break }
            guard let equals = line.firstIndex(of: "=") else { continue }
            let key = String(line[..<equals])
            let value = String(line[line.index(after: equals)...])
            request[key] = request[key].map { $0 + "\n" + value } ?? value
        }
        return request
    }
}

extension [String: String] {
    /// The `capability[]` values git sent.
    fileprivate var capabilities: Set<String> {
        Set((self["capability[]"] ?? "").split(separator: "\n").map(String.init))
    }
}
