import OAuth2

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A provider's settings as `oauth2 provider add` saves them, and as a preset
/// yields them: every field optional, a missing one left to the layer below.
///
/// Never a client secret: only the path of a file holding it
/// (`client_secret_file`) or the name of an environment variable holding it
/// (`client_secret_env`).
struct ProviderRecord: Codable, Equatable, Sendable {
    var preset: String?
    var tenant: String?
    var gitlabURL: String?
    var clientID: String?
    var authorizeURL: String?
    var tokenURL: String?
    var revokeURL: String?
    var deviceURL: String?
    var issuer: String?
    /// With ``issuerClaim``: the text of the issuer's discovery document that
    /// stands for a tenant (Microsoft's `{tenantid}`, ``IssuerRule/template(placeholder:claim:allowed:)``).
    var issuerPlaceholder: String?
    /// The ID token claim naming the tenant of ``issuerPlaceholder`` (`tid`).
    var issuerClaim: String?
    /// Other spellings of the issuer that ID tokens may name (Google's `accounts.google.com`).
    var issuerAliases: [String]?
    var scope: String?
    var redirectURI: String?
    var clientSecretFile: String?
    var clientSecretEnv: String?
    var authMethod: String?
    var audience: String?
    /// Extra authorize URL parameters, `NAME=VALUE` each (Google's `access_type=offline`).
    var authorizeParameters: [String]?
    /// The git host (`host` or `host:port`, optionally `https://`-prefixed) `oauth2 git-credential` answers for.
    var gitHost: String?
    /// The username `oauth2 git-credential` answers with.
    var gitUsername: String?
    /// The protected resources (RFC 9728 `resource`) `oauth2 call` found behind
    /// this authorization server: set only on a provider it saved itself.
    var resources: [String]?
    /// The https URL of the client ID metadata document the client identifies
    /// with (its `client_id` at servers that support them).
    var clientMetadataURL: String?
    /// What was registered dynamically (RFC 7591): never a secret, only
    /// whether one is kept (sealed, in the token store).
    var registration: RegistrationSummary?

    enum CodingKeys: String, CodingKey {
        case preset, tenant
        case gitlabURL = "gitlab_url"
        case clientID = "client_id"
        case authorizeURL = "authorize_url"
        case tokenURL = "token_url"
        case revokeURL = "revoke_url"
        case deviceURL = "device_url"
        case issuer, scope
        case issuerPlaceholder = "issuer_placeholder"
        case issuerClaim = "issuer_claim"
        case issuerAliases = "issuer_aliases"
        case redirectURI = "redirect_uri"
        case clientSecretFile = "client_secret_file"
        case clientSecretEnv = "client_secret_env"
        case authMethod = "auth_method"
        case audience
        case authorizeParameters = "authorize_parameters"
        case gitHost = "git_host"
        case gitUsername = "git_username"
        case resources
        case clientMetadataURL = "client_metadata_url"
        case registration
    }

    /// `self` over `base`: each field of `self`, else `base`'s.
    func over(_ base: ProviderRecord) -> ProviderRecord {
        ProviderRecord(
            preset: preset ?? base.preset, tenant: tenant ?? base.tenant, gitlabURL: gitlabURL ?? base.gitlabURL,
            clientID: clientID ?? base.clientID, authorizeURL: authorizeURL ?? base.authorizeURL, tokenURL: tokenURL ?? base.tokenURL,
            revokeURL: revokeURL ?? base.revokeURL, deviceURL: deviceURL ?? base.deviceURL, issuer: issuer ?? base.issuer,
            issuerPlaceholder: issuerPlaceholder ?? base.issuerPlaceholder, issuerClaim: issuerClaim ?? base.issuerClaim,
            issuerAliases: issuerAliases ?? base.issuerAliases,
            scope: scope ?? base.scope, redirectURI: redirectURI ?? base.redirectURI,
            clientSecretFile: clientSecretFile ?? base.clientSecretFile, clientSecretEnv: clientSecretEnv ?? base.clientSecretEnv,
            authMethod: authMethod ?? base.authMethod, audience: audience ?? base.audience,
            authorizeParameters: authorizeParameters ?? base.authorizeParameters,
            gitHost: gitHost ?? base.gitHost, gitUsername: gitUsername ?? base.gitUsername,
            resources: resources ?? base.resources, clientMetadataURL: clientMetadataURL ?? base.clientMetadataURL,
            registration: registration ?? base.registration
        )
    }
}

/// A dynamic registration as `providers.json` shows it: where it is managed
/// and whether secrets are kept, never the secrets (the client secret and
/// the registration access token stay sealed in the token store).
struct RegistrationSummary: Codable, Equatable, Sendable {
    /// `client_id_issued_at`, seconds since 1970.
    var clientIDIssuedAt: Int?
    /// RFC 7592's `registration_client_uri`, where `oauth2 register --show/--delete` go.
    var registrationClientURI: String?
    /// Whether a client secret was issued (kept in the token store).
    var hasClientSecret: Bool
    /// Whether a registration access token was issued (kept in the token store).
    var hasRegistrationAccessToken: Bool
    /// `token_endpoint_auth_method` as registered.
    var tokenEndpointAuthMethod: String?

    enum CodingKeys: String, CodingKey {
        case clientIDIssuedAt = "client_id_issued_at"
        case registrationClientURI = "registration_client_uri"
        case hasClientSecret = "has_client_secret"
        case hasRegistrationAccessToken = "has_registration_access_token"
        case tokenEndpointAuthMethod = "token_endpoint_auth_method"
    }

    init(_ registration: ClientRegistration) {
        clientIDIssuedAt = registration.clientIDIssuedAt.map { Int($0.timeIntervalSince1970) }
        registrationClientURI = registration.registrationClientURI?.absoluteString
        hasClientSecret = registration.clientSecret != nil
        hasRegistrationAccessToken = registration.registrationAccessToken != nil
        tokenEndpointAuthMethod = registration.metadata.tokenEndpointAuthMethod
    }
}

/// `providers.json` in the configuration directory: the saved providers by name.
struct ProviderFile: Codable, Sendable {
    var version = 1
    var providers: [String: ProviderRecord] = [:]

    static let fileName = "providers.json"

    /// The file's path.
    static func path() throws -> String { try ConfigDirectory.path() + "/" + fileName }

    /// The saved providers; none when the file does not exist.
    static func load() throws -> ProviderFile {
        let path = try path()
        guard let bytes = try ConfigDirectory.read(path) else { return ProviderFile() }
        do {
            let file = try JSONDecoder().decode(ProviderFile.self, from: Data(bytes))
            guard file.version == 1 else {
                throw OAuth2Error(
                    code: .invalidConfiguration, message: "the configuration file \(path) has version \(file.version); this oauth2 reads 1")
            }
            return file
        } catch let error as OAuth2Error {
            throw error
        } catch {
            throw OAuth2Error(code: .invalidConfiguration, message: "the configuration file \(path) is not valid: \(error)")
        }
    }

    /// Writes the file (mode 0600, atomically; the directory 0700).
    func save() throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        var bytes = Array(try encoder.encode(self))
        bytes.append(UInt8(ascii: "\n"))
        try ConfigDirectory.write(bytes, name: Self.fileName, in: try ConfigDirectory.path())
    }

    /// The saved providers' names, then the presets', for shell completion
    /// of `--provider` (an unreadable file just offers the presets).
    static func namesForCompletion() -> [String] {
        let saved = (try? load().providers.keys.sorted()) ?? []
        return saved + Preset.allCases.map(\.rawValue).filter { !saved.contains($0) }
    }

    /// Whether `name` may name a saved provider: letters, digits, `.`, `_`, `-`, starting with a letter or digit.
    static func isValidName(_ name: String) -> Bool {
        guard let first = name.unicodeScalars.first, name.utf8.count <= 64 else { return false }
        func plain(_ scalar: Unicode.Scalar) -> Bool {
            scalar.isASCII && (("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar) || ("0"..."9").contains(scalar))
        }
        return plain(first) && name.unicodeScalars.allSatisfy { plain($0) || $0 == "." || $0 == "_" || $0 == "-" }
    }
}

/// A provider named by `--provider`: a saved one (over its preset, if it
/// names one) or a preset alone.
struct ResolvedProvider: Sendable {
    let name: String
    /// Whether the name is a saved provider's (else it is a preset's).
    let isSaved: Bool
    /// The preset under it, if any.
    let preset: Preset?
    /// The settings: the saved provider's over the preset's.
    let record: ProviderRecord

    /// The provider `name` names, with `tenant` and `gitlabURL` (flags or
    /// variables) winning over a saved provider's.
    ///
    /// - Throws: ``UsageError`` when no saved provider or preset has the name.
    static func resolve(_ name: String, tenant: String?, gitlabURL: String?) throws -> ResolvedProvider {
        if let saved = try ProviderFile.load().providers[name] {
            guard let presetName = saved.preset else {
                return ResolvedProvider(name: name, isSaved: true, preset: nil, record: saved)
            }
            guard let preset = Preset(named: presetName) else {
                throw UsageError("the saved provider \(name) names the preset \(presetName), which does not exist")
            }
            let base = try preset.record(tenant: tenant ?? saved.tenant, gitlabURL: gitlabURL ?? saved.gitlabURL)
            return ResolvedProvider(name: name, isSaved: true, preset: preset, record: saved.over(base))
        }
        if let preset = Preset(named: name) {
            return ResolvedProvider(
                name: name, isSaved: false, preset: preset, record: try preset.record(tenant: tenant, gitlabURL: gitlabURL))
        }
        throw UsageError(
            "no saved provider or preset is named \(name) (saved: oauth2 provider list; presets: \(Preset.allCases.map(\.rawValue).joined(separator: ", ")))"
        )
    }
}
