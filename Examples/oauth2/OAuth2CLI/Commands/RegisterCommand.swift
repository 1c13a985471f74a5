import ArgumentParser
import OAuth2

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// `oauth2 register`: dynamic client registration (RFC 7591) and its
/// management (RFC 7592).
struct RegisterCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "register",
        abstract: "Register this CLI as a client at an authorization server (RFC 7591), or show or delete the registration (RFC 7592).",
        discussion: """
            Registers at the registration_endpoint of --issuer's metadata (or the
            issuer of --provider) with the redirect URI (--redirect-uri, default
            \(Settings.defaultRedirectURI), any port for loopback), the scopes
            (--scope) and --client-name, as a public client unless --auth-method
            asks for a secret. Prints the client id on stdout. The registration,
            with its client secret and registration access token, is kept sealed in
            the token store like tokens are (encrypted with OAUTH2_STORE_KEY), and
            the provider is saved under --name, or a name made from the issuer
            (host, -port, -path segments): "oauth2 provider show NAME" lists it,
            without secrets. The client secret is printed (a second stdout line)
            only with --print-client-secret.

            --show reads the registration back from the server (RFC 7592 read) and
            prints it as JSON, without secrets; --delete deletes it at the server
            and forgets it here. Both need the registration access token the
            server issued, which the store keeps.

            Example:
              oauth2 register --issuer https://id.example --scope "openid profile"
              oauth2 register --show --provider id.example
              oauth2 register --delete --provider id.example
            """
    )

    @OptionGroup var common: CommonOptions

    @Option(name: .customLong("client-name"), help: "The client_name shown on the consent page.")
    var clientName = "oauth2 (swift-oauth2)"

    @Option(name: .customLong("name"), help: "The name to save the provider under (default: made from the issuer).")
    var providerName: String?

    @Option(
        name: .customLong("initial-access-token-file"),
        help: "A file holding an initial access token, for a registration endpoint that wants one (RFC 7591 §3)."
    )
    var initialAccessTokenFile: String?

    @Flag(name: .customLong("print-client-secret"), help: "Also print the client secret, when one was issued (a second stdout line).")
    var printsClientSecret = false

    @Flag(help: "Read the kept registration back from the server (RFC 7592) and print it as JSON, without secrets.")
    var show = false

    @Flag(help: "Delete the kept registration at the server (RFC 7592) and here.")
    var delete = false

    func validate() throws {
        if show && delete {
            throw ValidationError("--show and --delete cannot be combined")
        }
        if let providerName, !ProviderFile.isValidName(providerName) {
            throw ValidationError("--name must be letters, digits, '.', '_' or '-' (at most 64), starting with a letter or digit")
        }
    }

    func run() async throws {
        try await Session.run(common) { session in
            let settings = session.settings
            guard let issuer = settings.issuer else {
                throw UsageError("the authorization server is needed: --issuer (or OAUTH2_ISSUER), or --provider with an issuer")
            }
            guard case .directory = settings.store, let store = try session.store(for: nil) as? any TokenStore & ClientRecordStore
            else {
                throw UsageError("registrations are kept in a store directory (--store DIRECTORY), not in a PostgreSQL store")
            }
            // RFC 8414 first (the MCP order): an OpenID configuration may leave the registration endpoint out.
            let rules = DiscoveryRules(timeout: settings.timeout)
            let server = try await AuthorizationServerMetadata.discover(
                authorizationServer: issuer, rules: rules, transport: session.transport)
            let registrar = ClientRegistrar(metadata: server, transport: session.transport, rules: rules)
            if show {
                try await showRegistration(registrar, store: store, issuer: server.issuer)
            } else if delete {
                try await deleteRegistration(registrar, store: store, issuer: server.issuer)
            } else {
                try await register(registrar, server: server, store: store, settings: settings)
            }
        }
    }

    private func register(
        _ registrar: ClientRegistrar, server: AuthorizationServerMetadata, store: any ClientRecordStore, settings: Settings
    ) async throws {
        let method = settings.authentication?.description ?? "none"
        let metadata = ClientMetadata(
            redirectURIs: [settings.redirectURI],
            clientName: clientName,
            tokenEndpointAuthMethod: method,
            scope: settings.scopes.isEmpty ? nil : settings.scopes.joined(separator: " "),
            softwareID: "swift-oauth2-cli",
            softwareVersion: OAuth2Command.version
        )
        let initialAccessToken = try initialAccessTokenFile.map {
            try SecretFile.load($0, what: "the initial access token file (--initial-access-token-file)")
        }
        let registration = try await registrar.register(metadata, initialAccessToken: initialAccessToken)
        // Kept before anything else can fail: the server holds the client now,
        // and only this record can manage it.
        try await store.saveRegistration(registration)
        var file = try ProviderFile.load()
        let name = providerName ?? DiscoveredProvider.savedName(forIssuer: server.issuer, in: file)
        if let existing = file.providers[name], !DiscoveredProvider.isDiscovered(existing) {
            StandardError.line("note: the provider \(name) saved by hand is replaced by the registration's settings")
            file.providers[name] = nil
            try file.save()
        }
        var record = file.providers[name] ?? ProviderRecord()
        record.issuer = server.issuer
        record.authorizeURL = server.authorizationEndpoint?.absoluteString
        record.tokenURL = server.tokenEndpoint?.absoluteString
        record.revokeURL = server.revocationEndpoint?.absoluteString
        record.deviceURL = server.deviceAuthorizationEndpoint?.absoluteString
        record.redirectURI = settings.redirectURI.absoluteString
        record.clientID = registration.clientID
        record.scope = registration.metadata.scope ?? record.scope
        record.registration = RegistrationSummary(registration)
        record.clientMetadataURL = nil
        record.authMethod = AuthMethod(name: registration.metadata.tokenEndpointAuthMethod)?.name
        file.providers[name] = record
        try file.save()
        StandardOutput.line(registration.clientID)
        if printsClientSecret {
            if let secret = registration.clientSecret {
                StandardOutput.line(secret.value)
            } else {
                StandardError.line("note: the server issued no client secret (a public client)")
            }
        }
        StandardError.line(
            "Registered at \(server.issuer); saved as the provider \(name) (oauth2 provider show \(name)). The registration is kept in the token store."
        )
    }

    private func showRegistration(_ registrar: ClientRegistrar, store: any ClientRecordStore, issuer: String) async throws {
        let kept = try await keptRegistration(store, issuer: issuer)
        let current = try await registrar.read(kept)
        // The server's view replaces ours: a rotated registration token (RFC 7592 §2.1) must not be lost.
        try await store.saveRegistration(current)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        StandardOutput.line(String(decoding: try encoder.encode(ShownRegistration(current)), as: UTF8.self))
    }

    private func deleteRegistration(_ registrar: ClientRegistrar, store: any ClientRecordStore, issuer: String) async throws {
        let kept = try await keptRegistration(store, issuer: issuer)
        try await registrar.delete(kept)
        try await store.deleteRegistration(issuer: issuer)
        var file = try ProviderFile.load()
        for (name, record) in file.providers where record.issuer == issuer && record.registration != nil {
            var forgotten = record
            forgotten.registration = nil
            forgotten.clientID = nil
            file.providers[name] = forgotten
        }
        try file.save()
        StandardError.line("Deleted the registration of \(kept.clientID) at \(issuer).")
    }

    private func keptRegistration(_ store: any ClientRecordStore, issuer: String) async throws -> ClientRegistration {
        guard let registration = try await store.loadRegistration(issuer: issuer) else {
            throw UsageError("no registration at \(issuer) is kept in this store (oauth2 register --issuer \(issuer) makes one)")
        }
        return registration
    }

    /// A registration as `--show` prints it: everything but the secrets,
    /// which show only as whether they exist.
    struct ShownRegistration: Encodable {
        let issuer: String
        let clientID: String
        let clientIDIssuedAt: Int?
        let clientSecretExpiresAt: Int?
        let registrationClientURI: String?
        let hasClientSecret: Bool
        let hasRegistrationAccessToken: Bool
        let metadata: ClientMetadata

        enum CodingKeys: String, CodingKey {
            case issuer
            case clientID = "client_id"
            case clientIDIssuedAt = "client_id_issued_at"
            case clientSecretExpiresAt = "client_secret_expires_at"
            case registrationClientURI = "registration_client_uri"
            case hasClientSecret = "has_client_secret"
            case hasRegistrationAccessToken = "has_registration_access_token"
            case metadata
        }

        init(_ registration: ClientRegistration) {
            issuer = registration.issuer
            clientID = registration.clientID
            clientIDIssuedAt = registration.clientIDIssuedAt.map { Int($0.timeIntervalSince1970) }
            clientSecretExpiresAt = registration.clientSecretExpiresAt.map { Int($0.timeIntervalSince1970) }
            registrationClientURI = registration.registrationClientURI?.absoluteString
            hasClientSecret = registration.clientSecret != nil
            hasRegistrationAccessToken = registration.registrationAccessToken != nil
            metadata = registration.metadata
        }
    }
}
