import OAuth2

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The providers the CLI knows: their endpoints and quirks, so that
/// `oauth2 authorize --provider github --client-id …` is enough.
///
/// A preset is the lowest layer of the settings: a saved provider, an
/// `OAUTH2_*` variable and a flag each win over it. Nothing here is fetched:
/// the endpoints are written out, so a preset works (and is tested) offline;
/// a preset with an issuer still has its OpenID configuration fetched when a
/// command signs in, to verify ID tokens.
enum Preset: String, CaseIterable, Sendable {
    case github
    case google
    case microsoft
    case gitlab
    case apple

    /// The preset `name` names (`entra` and `azure` are `microsoft`'s other names).
    init?(named name: String) {
        switch name.lowercased() {
        case "entra", "azure", "entra-id": self = .microsoft
        default: self.init(rawValue: name.lowercased())
        }
    }

    /// The Entra ID tenant when none is given: any work, school or personal account.
    static let defaultTenant = "common"
    /// The Entra ID tenants whose discovery documents name an issuer template.
    static let multiTenantNames: Set<String> = ["common", "organizations", "consumers"]
    /// GitLab when no `--gitlab-url` is given.
    static let defaultGitLabURL = "https://gitlab.com"

    /// What the preset sets, for `tenant` (microsoft) and `gitlabURL` (gitlab).
    ///
    /// - Throws: ``UsageError`` for a tenant or GitLab URL that cannot be used.
    func record(tenant: String? = nil, gitlabURL: String? = nil) throws -> ProviderRecord {
        var record = ProviderRecord()
        record.preset = rawValue
        switch self {
        case .github:
            // OAuth only (no OpenID Connect). The token and device endpoints
            // answer form-encoded unless asked for JSON: the framework always
            // sends Accept: application/json, and reads the errors GitHub
            // returns with status 200. No revocation endpoint of RFC 7009's kind.
            record.authorizeURL = "https://github.com/login/oauth/authorize"
            record.tokenURL = "https://github.com/login/oauth/access_token"
            record.deviceURL = "https://github.com/login/device/code"
            record.gitHost = "github.com"
            record.gitUsername = "x-access-token"
        case .google:
            record.authorizeURL = "https://accounts.google.com/o/oauth2/v2/auth"
            record.tokenURL = "https://oauth2.googleapis.com/token"
            record.deviceURL = "https://oauth2.googleapis.com/device/code"
            record.revokeURL = "https://oauth2.googleapis.com/revoke"
            record.issuer = "https://accounts.google.com"
            // Google's ID tokens name either spelling ("Authenticate with a backend server").
            record.issuerAliases = ["accounts.google.com"]
            record.scope = "openid email profile"
            // Google issues a refresh token only with access_type=offline, and
            // again after the first consent only with prompt=consent.
            record.authorizeParameters = ["access_type=offline", "prompt=consent"]
        case .microsoft:
            let tenant = tenant ?? Self.defaultTenant
            guard !tenant.isEmpty, tenant.utf8.count <= 64,
                tenant.unicodeScalars.allSatisfy({
                    $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "-" || $0 == ".")
                })
            else {
                throw UsageError("--tenant must be common, organizations, consumers, a tenant id or a domain name")
            }
            record.tenant = tenant
            let base = "https://login.microsoftonline.com/\(tenant)"
            record.authorizeURL = base + "/oauth2/v2.0/authorize"
            record.tokenURL = base + "/oauth2/v2.0/token"
            record.deviceURL = base + "/oauth2/v2.0/devicecode"
            // A refresh token only with offline_access.
            record.scope = "openid profile email offline_access"
            // The issuer of a tenant id is the tenant's. The multi-tenant
            // names' discovery documents name the template
            // https://login.microsoftonline.com/{tenantid}/v2.0: an ID token's
            // iss is then checked against the template filled with its tid.
            // A domain name's document names the tenant id's issuer, which
            // is not the domain's URL: no issuer then (give the tenant id).
            if Self.isGUID(tenant) || Self.multiTenantNames.contains(tenant.lowercased()) {
                record.issuer = base + "/v2.0"
                record.issuerPlaceholder = "{tenantid}"
                record.issuerClaim = "tid"
            }
        case .apple:
            // "Sign in with Apple REST API": client_secret_post (the library's
            // default for a signed secret) with a client secret the CLI signs
            // (--team-id, --key-id, --key-file), and the answer posted as a
            // form whenever name or email is asked for.
            record.authorizeURL = "https://appleid.apple.com/auth/authorize"
            record.tokenURL = "https://appleid.apple.com/auth/token"
            record.revokeURL = "https://appleid.apple.com/auth/revoke"
            record.issuer = "https://appleid.apple.com"
            record.scope = "openid name email"
            record.authorizeParameters = ["response_mode=form_post"]
        case .gitlab:
            var url = gitlabURL ?? Self.defaultGitLabURL
            while url.hasSuffix("/") { url.removeLast() }
            guard let parsed = URL(string: url), let scheme = parsed.scheme?.lowercased(), let host = parsed.host, !host.isEmpty,
                scheme == "https" || (scheme == "http" && Self.isLoopback(host)),
                parsed.query == nil, parsed.fragment == nil
            else {
                throw UsageError("--gitlab-url must be an https URL such as https://gitlab.example.com")
            }
            record.gitlabURL = url
            record.authorizeURL = url + "/oauth/authorize"
            record.tokenURL = url + "/oauth/token"
            record.revokeURL = url + "/oauth/revoke"
            record.deviceURL = url + "/oauth/authorize_device"
            record.issuer = url
            record.scope = "openid read_repository write_repository"
            record.gitHost = parsed.port.map { "\(host):\($0)" } ?? host
            record.gitUsername = "oauth2"
        }
        return record
    }

    /// What a person should know about the provider (`oauth2 provider show`).
    var notes: [String] {
        switch self {
        case .github:
            [
                "No OpenID Connect; the scopes are GitHub's (e.g. \"repo read:user\"), space-separated.",
                "Tokens do not expire and there is no refresh token unless the app has expiring user tokens enabled.",
                "git: username x-access-token, the token as the password.",
            ]
        case .google:
            [
                "access_type=offline and prompt=consent are sent so that Google returns a refresh token.",
                "The issuer's OpenID configuration is fetched at sign-in to verify ID tokens; their iss may be https://accounts.google.com or accounts.google.com.",
                "--hosted-domain D signs in only accounts of that Google Workspace domain (the hd claim).",
            ]
        case .microsoft:
            [
                "--tenant: common (default), organizations, consumers, or your tenant's id or domain.",
                "offline_access is in the scopes so that a refresh token is issued.",
                "ID tokens are verified for every tenant: iss must be the tenant's issuer of the token's tid; --allowed-tenant ID restricts the tenants.",
                "With a domain name as --tenant, ID tokens are not verified: give the tenant's id instead.",
            ]
        case .apple:
            [
                "--team-id, --key-id and --key-file (the .p8 key, 0600): the CLI signs the client secret and renews it.",
                "Apple posts its answer to the redirect URI (an https page of yours; no loopback): paste the posted form body (code=…&state=…).",
                "email_verified and is_private_email may be strings or booleans; both are read.",
            ]
        case .gitlab:
            [
                "--gitlab-url for a self-hosted GitLab (default https://gitlab.com).",
                "git: username oauth2, the token as the password (read_repository/write_repository scopes).",
            ]
        }
    }

    static func isGUID(_ text: String) -> Bool {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        return parts.map(\.count) == [8, 4, 4, 4, 12] && parts.allSatisfy { $0.allSatisfy(\.isHexDigit) }
    }

    static func isLoopback(_ host: String) -> Bool {
        ["127.0.0.1", "localhost", "::1", "[::1]"].contains(host.lowercased())
    }
}
