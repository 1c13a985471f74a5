import OAuth2

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The common options with the environment applied: flag, else `OAUTH2_*`
/// variable, else the saved provider's value, else its preset's, else the default.
struct Settings: Sendable {
    /// The provider `--provider` (or `OAUTH2_PROVIDER`) names, when one does.
    var provider: ResolvedProvider?
    /// The authorize URL parameters the provider asks for (`access_type=offline`).
    var authorizeParameters: [(String, String)]
    /// The git host `oauth2 git-credential` answers for, by default.
    var gitHost: String?
    /// The username `oauth2 git-credential` answers with, by default.
    var gitUsername: String?
    var tokenURL: URL?
    var authorizeURL: URL?
    var revokeURL: URL?
    var deviceURL: URL?
    var clientID: String?
    var clientSecret: Secret?
    /// The method asked for, or `nil` for the default (basic with a secret, none without).
    var authentication: ClientAuthentication?
    /// The private key of private_key_jwt, when one is given.
    var clientKey: JWTSigningKey?
    /// The client secret the CLI signs (Sign in with Apple: `--team-id`,
    /// `--key-id`, `--key-file`), when the three are given.
    var signedClientSecret: SignedClientSecret?
    var resources: [URL]
    var audience: String?
    var scopes: [String]
    var redirectURI: URL
    var issuer: String?
    /// Which `iss` values name the issuer: the provider's template or other spellings, else exact.
    var issuerRule: IssuerRule
    /// The hosted domains (`hd`) whose accounts may sign in; `nil` for any.
    var hostedDomains: Set<String>?
    var store: StoreLocation
    var account: String
    var caFile: String?
    /// The client certificate for mutual TLS, read and checked, when one is given.
    var clientCertificate: ClientCertificate?
    var timeout: Duration
    var verbose: Bool

    /// The redirect URI when none is given: a loopback one, which providers
    /// following RFC 8252 §7.3 accept on any port.
    static let defaultRedirectURI = "http://127.0.0.1/callback"

    /// Resolves the options.
    ///
    /// - Throws: ``UsageError`` for a malformed value; `OAuth2Error`
    ///   `invalid_configuration` when the client secret file cannot be read.
    init(_ options: CommonOptions) throws {
        if let name = options.provider ?? EnvironmentVariables.value("OAUTH2_PROVIDER") {
            provider = try ResolvedProvider.resolve(
                name,
                tenant: options.tenant ?? EnvironmentVariables.value("OAUTH2_TENANT"),
                gitlabURL: options.gitlabURL ?? EnvironmentVariables.value("OAUTH2_GITLAB_URL")
            )
        } else {
            provider = nil
        }
        let saved = provider?.record ?? ProviderRecord()
        func pick(_ flag: String?, _ variable: String, _ fallback: String? = nil) -> String? {
            flag ?? EnvironmentVariables.value(variable) ?? fallback
        }
        func url(_ flag: String?, _ variable: String, _ fallback: String?, option: String) throws -> URL? {
            guard let text = pick(flag, variable, fallback) else { return nil }
            guard let url = URL(string: text), url.scheme != nil, url.host != nil else {
                throw UsageError("\(option) (or \(variable)) is not an absolute URL")
            }
            return url
        }
        tokenURL = try url(options.tokenURL, "OAUTH2_TOKEN_URL", saved.tokenURL, option: "--token-url")
        authorizeURL = try url(options.authorizeURL, "OAUTH2_AUTHORIZE_URL", saved.authorizeURL, option: "--authorize-url")
        revokeURL = try url(options.revokeURL, "OAUTH2_REVOKE_URL", saved.revokeURL, option: "--revoke-url")
        deviceURL = try url(options.deviceURL, "OAUTH2_DEVICE_URL", saved.deviceURL, option: "--device-url")
        guard
            let redirectURI = try url(options.redirectURI, "OAUTH2_REDIRECT_URI", saved.redirectURI, option: "--redirect-uri")
                ?? URL(string: Self.defaultRedirectURI)
        else {
            throw UsageError("--redirect-uri is needed")
        }
        self.redirectURI = redirectURI
        clientID = pick(options.clientID, "OAUTH2_CLIENT_ID", saved.clientID)
        issuer = pick(options.issuer, "OAUTH2_ISSUER", saved.issuer)
        func list(_ flags: [String], _ variable: String) -> [String] {
            flags.isEmpty ? (EnvironmentVariables.value(variable)?.split(whereSeparator: \.isWhitespace).map(String.init) ?? []) : flags
        }
        let allowedTenants = list(options.allowedTenants, "OAUTH2_ALLOWED_TENANTS")
        let aliases = list(options.issuerAliases, "OAUTH2_ISSUER_ALIASES")
        if let placeholder = saved.issuerPlaceholder, let claim = saved.issuerClaim {
            guard allowedTenants.allSatisfy(Preset.isGUID) else {
                throw UsageError("--allowed-tenant (or OAUTH2_ALLOWED_TENANTS) must be a tenant id (a GUID)")
            }
            issuerRule = .template(placeholder: placeholder, claim: claim, allowed: allowedTenants.isEmpty ? nil : Set(allowedTenants))
        } else if !allowedTenants.isEmpty {
            throw UsageError("--allowed-tenant needs a provider whose issuer is a tenant template (the microsoft preset)")
        } else if !(aliases + (saved.issuerAliases ?? [])).isEmpty {
            issuerRule = .anyOf(aliases.isEmpty ? saved.issuerAliases ?? [] : aliases)
        } else {
            issuerRule = .exact
        }
        let domains = list(options.hostedDomains, "OAUTH2_HOSTED_DOMAINS")
        hostedDomains = domains.isEmpty ? nil : Set(domains)
        scopes = pick(options.scope, "OAUTH2_SCOPE", saved.scope).map { $0.split(whereSeparator: \.isWhitespace).map(String.init) } ?? []
        // Each provider's tokens under an account of its own, so that two never replace each other's.
        // A provider `oauth2 call` saved keeps its tokens where the call did: per
        // resource, under the account given, or "default".
        let providerAccount = provider.flatMap { DiscoveredProvider.isDiscovered($0.record) ? nil : $0.name }
        account = pick(options.account, "OAUTH2_ACCOUNT", providerAccount) ?? "default"
        authorizeParameters = try (saved.authorizeParameters ?? []).map { parameter in
            guard let equals = parameter.firstIndex(of: "="), equals != parameter.startIndex else {
                throw UsageError("the provider's authorize parameter \(parameter) is not NAME=VALUE")
            }
            return (String(parameter[..<equals]), String(parameter[parameter.index(after: equals)...]))
        }
        gitHost = saved.gitHost
        gitUsername = saved.gitUsername
        caFile = pick(options.caFile, "OAUTH2_CA_FILE")
        switch (
            pick(options.clientCertificate, "OAUTH2_CLIENT_CERTIFICATE"),
            pick(options.clientCertificateKey, "OAUTH2_CLIENT_CERTIFICATE_KEY")
        ) {
        case (let certificate?, let key?):
            clientCertificate = try ClientCertificate(certificateFile: certificate, keyFile: key)
        case (nil, nil):
            clientCertificate = nil
        case (_?, nil):
            throw UsageError("--client-certificate needs its private key: --client-key (or OAUTH2_CLIENT_CERTIFICATE_KEY)")
        case (nil, _?):
            throw UsageError("--client-key needs its certificate: --client-certificate (or OAUTH2_CLIENT_CERTIFICATE)")
        }
        verbose = options.verbose || EnvironmentVariables.isTrue("OAUTH2_VERBOSE")

        if let flag = options.timeout {
            timeout = .milliseconds(Int64(flag * 1000))
        } else if let text = EnvironmentVariables.value("OAUTH2_TIMEOUT") {
            guard let seconds = Double(text), seconds > 0, seconds <= 86_400 else {
                throw UsageError("OAUTH2_TIMEOUT must be a number of seconds between 0 and 86400")
            }
            timeout = .milliseconds(Int64(seconds * 1000))
        } else {
            timeout = .seconds(30)
        }

        // The flag is checked by the parser; the variable and the saved provider here.
        if let method = options.authMethod {
            authentication = method.authentication
        } else if let name = EnvironmentVariables.value("OAUTH2_AUTH_METHOD") {
            guard let method = AuthMethod(name: name) else {
                throw UsageError("OAUTH2_AUTH_METHOD must be \(AuthMethod.namesInWords), not \(name)")
            }
            authentication = method.authentication
        } else if let name = saved.authMethod {
            guard let method = AuthMethod(name: name) else {
                throw UsageError("the auth method of the provider \(provider?.name ?? "") must be \(AuthMethod.namesInWords), not \(name)")
            }
            authentication = method.authentication
        } else {
            authentication = nil
        }

        if let file = pick(options.clientKeyFile, "OAUTH2_CLIENT_KEY_FILE") {
            let pem = try SecretFile.load(file, what: "the client key file (--client-key-file)")
            let keyID = pick(options.clientKeyID, "OAUTH2_CLIENT_KEY_ID")
            do {
                clientKey = try JWTSigningKey.rsa(pem: pem.value, keyID: keyID)
            } catch {
                do {
                    clientKey = try JWTSigningKey.ecdsa(pem: pem.value, keyID: keyID)
                } catch {
                    throw UsageError("the client key file holds no RSA or EC private key in PEM")
                }
            }
        } else {
            clientKey = nil
        }
        switch (pick(options.teamID, "OAUTH2_TEAM_ID"), pick(options.keyID, "OAUTH2_KEY_ID"), pick(options.keyFile, "OAUTH2_KEY_FILE")) {
        case (nil, nil, nil):
            signedClientSecret = nil
        case (let teamID?, let keyID?, let keyFile?):
            guard let audience = issuer else {
                throw UsageError("a client secret signed with --key-file needs the issuer it is for: --issuer (the apple preset has it)")
            }
            let pem = try PrivateKeyFile.read(keyFile)
            let key: JWTSigningKey
            do {
                key = try JWTSigningKey.ecdsa(pem: pem.value, keyID: keyID)
            } catch {
                throw UsageError("--key-file holds no EC private key in PEM (Apple's .p8 file is one)")
            }
            signedClientSecret = try SignedClientSecret(issuer: teamID, audience: audience, key: key)
        default:
            throw UsageError("--team-id, --key-id and --key-file go together (or OAUTH2_TEAM_ID, OAUTH2_KEY_ID, OAUTH2_KEY_FILE)")
        }
        let resourceTexts =
            options.resources.isEmpty
            ? (EnvironmentVariables.value("OAUTH2_RESOURCE")?.split(whereSeparator: \.isWhitespace).map(String.init) ?? [])
            : options.resources
        resources = try resourceTexts.map { text in
            guard let url = URL(string: text), url.scheme != nil else {
                throw UsageError("--resource (or OAUTH2_RESOURCE) must be an absolute URI: \(text)")
            }
            return url
        }
        audience = pick(options.audience, "OAUTH2_AUDIENCE", saved.audience)

        if let file = pick(options.clientSecretFile, "OAUTH2_CLIENT_SECRET_FILE") {
            clientSecret = try SecretFile.load(file)
        } else if let secret = EnvironmentVariables.value("OAUTH2_CLIENT_SECRET") {
            clientSecret = Secret(secret)
        } else if let file = saved.clientSecretFile {
            clientSecret = try SecretFile.load(file, what: "the client secret file of the provider \(provider?.name ?? "")")
        } else if let variable = saved.clientSecretEnv {
            guard let secret = EnvironmentVariables.value(variable) else {
                throw UsageError("the provider \(provider?.name ?? "") takes its client secret from $\(variable), which is not set")
            }
            clientSecret = Secret(secret)
        } else {
            clientSecret = nil
        }

        if let location = pick(options.store, "OAUTH2_STORE") {
            let lowered = location.lowercased()
            if lowered.hasPrefix("postgresql://") || lowered.hasPrefix("postgres://") {
                store = .postgres(url: location, table: EnvironmentVariables.value("OAUTH2_STORE_TABLE") ?? "oauth2_tokens")
            } else {
                store = .directory(location)
            }
        } else if let config = EnvironmentVariables.value("XDG_CONFIG_HOME"), config.hasPrefix("/") {
            store = .directory(config + "/oauth2")
        } else if let home = EnvironmentVariables.value("HOME") {
            store = .directory(home + "/.config/oauth2")
        } else {
            throw UsageError("no token store directory: give --store (or OAUTH2_STORE), or set HOME")
        }
    }
}

/// Where tokens are kept: a directory (``FileTokenStore``) or a PostgreSQL
/// database (``PostgresTokenStore``, a table in it).
enum StoreLocation: Sendable {
    case directory(String)
    case postgres(url: String, table: String)
}
