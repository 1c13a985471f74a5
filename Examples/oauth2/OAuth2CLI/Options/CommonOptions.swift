import ArgumentParser

/// The options every command takes (DESIGN.md §7). Each may also come from
/// an `OAUTH2_*` environment variable; the flag wins.
///
/// The client secret is never a flag value (it would show in `ps` and in the
/// shell's history): it comes from `--client-secret-file` or `OAUTH2_CLIENT_SECRET`.
struct CommonOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "A saved provider (oauth2 provider add) or a preset: github, google, microsoft, gitlab, apple (OAUTH2_PROVIDER).",
            discussion: "Its settings fill those not given by a flag or an OAUTH2_* variable; its tokens are kept under its own account."
        ),
        completion: .custom { _, _, _ in ProviderFile.namesForCompletion() }
    )
    var provider: String?

    @Option(
        help: "The Microsoft Entra ID tenant of the microsoft preset: common (default), organizations, consumers or an id (OAUTH2_TENANT).")
    var tenant: String?

    @Option(
        name: .customLong("allowed-tenant"),
        help: ArgumentHelp(
            "A tenant id (GUID) whose users may sign in, for a provider whose issuer is a tenant template such as the microsoft preset's; repeatable (OAUTH2_ALLOWED_TENANTS, space-separated).",
            discussion: "Without it, an ID token of any tenant is verified against its own tenant's issuer."
        )
    )
    var allowedTenants: [String] = []

    @Option(
        name: .customLong("issuer-alias"),
        help:
            "Another spelling of the issuer that ID tokens may name in iss, like Google's accounts.google.com; repeatable (OAUTH2_ISSUER_ALIASES, space-separated)."
    )
    var issuerAliases: [String] = []

    @Option(
        name: .customLong("hosted-domain"),
        help:
            "A hosted domain (Google's hd claim) whose accounts may sign in; repeatable (OAUTH2_HOSTED_DOMAINS, space-separated). Consumer accounts have none."
    )
    var hostedDomains: [String] = []

    @Option(
        name: .customLong("team-id"),
        help: "Sign in with Apple: the 10-character team id, the client secret JWT's iss (OAUTH2_TEAM_ID).")
    var teamID: String?

    @Option(
        name: .customLong("key-id"), help: "Sign in with Apple: the 10-character id of the key in --key-file, its kid (OAUTH2_KEY_ID).")
    var keyID: String?

    @Option(
        name: .customLong("key-file"),
        help: ArgumentHelp(
            "Sign in with Apple: the .p8 key file that signs the client secret (OAUTH2_KEY_FILE).",
            discussion: "Held to the token store's checks: yours, not a symbolic link, 0600 or 0400."
        )
    )
    var keyFile: String?

    @Option(
        name: .customLong("gitlab-url"), help: "A self-hosted GitLab for the gitlab preset (OAUTH2_GITLAB_URL; default https://gitlab.com)."
    )
    var gitlabURL: String?

    @Option(name: .customLong("token-url"), help: "The token endpoint (OAUTH2_TOKEN_URL).")
    var tokenURL: String?

    @Option(name: .customLong("authorize-url"), help: "The authorization endpoint (OAUTH2_AUTHORIZE_URL).")
    var authorizeURL: String?

    @Option(name: .customLong("revoke-url"), help: "The revocation endpoint, RFC 7009 (OAUTH2_REVOKE_URL).")
    var revokeURL: String?

    @Option(name: .customLong("device-url"), help: "The device authorization endpoint, RFC 8628 (OAUTH2_DEVICE_URL).")
    var deviceURL: String?

    @Option(name: .customLong("client-id"), help: "The client identifier (OAUTH2_CLIENT_ID).")
    var clientID: String?

    @Option(
        name: .customLong("client-secret-file"),
        help: ArgumentHelp(
            "A file holding the client secret (OAUTH2_CLIENT_SECRET_FILE, or the secret itself in OAUTH2_CLIENT_SECRET).",
            discussion: "One trailing line break is ignored. Without a secret the client is public."
        )
    )
    var clientSecretFile: String?

    @Option(
        name: .customLong("auth-method"),
        help:
            "How the client authenticates (OAUTH2_AUTH_METHOD; default basic when there is a secret, private_key_jwt with --client-key-file)."
    )
    var authMethod: AuthMethod?

    @Option(
        name: .customLong("client-key-file"),
        help: ArgumentHelp(
            "A PEM file holding the client's private key (RSA or EC) for private_key_jwt, RFC 7523 (OAUTH2_CLIENT_KEY_FILE).",
            discussion: "RSA keys sign RS256, EC keys ES256/ES384/ES512 by their curve."
        )
    )
    var clientKeyFile: String?

    @Option(
        name: .customLong("client-key-id"), help: "The kid of the client's key, as registered with the provider (OAUTH2_CLIENT_KEY_ID).")
    var clientKeyID: String?

    @Option(
        name: .customLong("resource"), help: "A resource the token is for, RFC 8707; repeat for several (OAUTH2_RESOURCE, space-separated)."
    )
    var resources: [String] = []

    @Option(help: "An audience parameter for providers that want one, such as Auth0 (OAUTH2_AUDIENCE).")
    var audience: String?

    @Option(help: "The scopes to ask for, space-separated, e.g. \"read write\" (OAUTH2_SCOPE).")
    var scope: String?

    @Option(
        name: .customLong("redirect-uri"),
        help: "The redirect URI registered with the provider (OAUTH2_REDIRECT_URI; default http://127.0.0.1/callback).")
    var redirectURI: String?

    @Option(
        help:
            "The issuer: its OpenID Connect configuration (or RFC 8414 metadata) fills the endpoints not given, redirects' iss is checked, and with openid in the scope the ID token is verified (OAUTH2_ISSUER)."
    )
    var issuer: String?

    @Option(
        help: """
            The token store: a directory (default $XDG_CONFIG_HOME/oauth2 or ~/.config/oauth2), or a \
            PostgreSQL database, postgresql://user@host:port/db?sslmode=require, its password in \
            PGPASSWORD or the file OAUTH2_STORE_PASSWORD_FILE names, never in the URL (OAUTH2_STORE).
            """)
    var store: String?

    @Option(
        help:
            "The account whose token to use: one file per account in the store (OAUTH2_ACCOUNT; default \"default\", or the --provider's name)."
    )
    var account: String?

    @Option(name: .customLong("ca-file"), help: "A PEM file of certificate authorities to trust instead of the system's (OAUTH2_CA_FILE).")
    var caFile: String?

    @Option(
        name: .customLong("client-certificate"),
        help: ArgumentHelp(
            "A PEM client certificate (chain) for mutual TLS, RFC 8705, with --client-key (OAUTH2_CLIENT_CERTIFICATE).",
            discussion:
                "Presented to the provider and, with the tokens obtained with it, to resource servers; tokens obtained with it go out with no other certificate. With --issuer, the provider's mtls_endpoint_aliases are used."
        )
    )
    var clientCertificate: String?

    @Option(
        name: .customLong("client-key"),
        help:
            "The PEM private key of --client-certificate: a regular file of yours, mode 0600 or 0400, not a symbolic link (OAUTH2_CLIENT_CERTIFICATE_KEY)."
    )
    var clientCertificateKey: String?

    @Option(help: "The longest a request may take, in seconds (OAUTH2_TIMEOUT; default 30).")
    var timeout: Double?

    @Flag(help: "Debug logs on stderr; they never show a secret (OAUTH2_VERBOSE=1).")
    var verbose = false

    func validate() throws {
        if let timeout, !(timeout > 0 && timeout <= 86_400) {
            throw ValidationError("--timeout must be a number of seconds between 0 and 86400")
        }
    }
}
