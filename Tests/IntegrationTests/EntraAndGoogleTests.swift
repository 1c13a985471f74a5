import Foundation
import OAuth2
import Testing

/// Microsoft Entra ID for any tenant, and Google's two `iss` spellings,
/// through the library against the test provider that behaves as their
/// documentation says (Tests/EntraProvider/serve.py; neither can be reached
/// from here). Each test names the page it follows:
/// - "OpenID Connect on the Microsoft identity platform": the discovery
///   document of `common`, `organizations` and `consumers` names the issuer
///   template `https://login.microsoftonline.com/{tenantid}/v2.0` and the shared
///   key set `common/discovery/v2.0/keys`; the redirect has no `iss`.
/// - "Microsoft identity platform ID tokens": `iss` names the user's tenant,
///   `tid` is its GUID (personal accounts: 9188040d-6c67-4c5b-b112-36a304b66dad).
/// - "Validate tokens — multi-tenant applications": `iss` must be the template
///   filled with `tid`, and an app may allow only some tenants.
/// - Google Identity, "Authenticate with a backend server": `iss` is
///   `https://accounts.google.com` or `accounts.google.com`; `hd` is the
///   Workspace domain, absent for consumer accounts.
@Suite(.enabled(if: EntraProvider.isConfigured, "needs the Entra/Google test provider: `make test` starts it and sets OAUTH2_IT_ENTRA"))
struct EntraAndGoogleTests {
    static let template = IssuerRule.template(placeholder: "{tenantid}", claim: "tid")
    static let scopes = ["openid", "profile", "email", "offline_access"]

    /// A provider discovered from `tenant`'s endpoint with `rule`, as an app makes one.
    static func microsoft(
        _ local: EntraProvider, tenant: String = "common", rule: IssuerRule = template, transport: CurlTransport
    ) async throws -> OAuth2Provider {
        let configuration = try await OAuth2Configuration.discover(
            issuer: "\(local.base)/\(tenant)/v2.0", clientID: local.clientID, clientSecret: Secret(local.clientSecret),
            transport: transport, issuerRule: rule)
        return try OAuth2Provider(configuration: configuration, transport: transport)
    }

    /// Signs `login` in through `client`: the authorize URL, the provider's redirect, the code exchange.
    static func signIn(_ client: OAuth2Client, _ login: String, at local: EntraProvider, transport: CurlTransport) async throws
        -> AccessToken
    {
        let pending = try await client.authorizationURL(
            redirectURI: EntraProvider.redirectURI, scopes: scopes, additionalParameters: [("login_hint", login)])
        let redirect = try await local.browse(pending.url, transport: transport)
        return try await client.authenticate(.authorizationCode(redirect: redirect, pending: pending))
    }

    static func signInError(_ client: OAuth2Client, _ login: String, at local: EntraProvider, transport: CurlTransport) async
        -> OAuth2Error?
    {
        do {
            _ = try await signIn(client, login, at: local, transport: transport)
            Issue.record("\(login) was signed in")
            return nil
        } catch let error as OAuth2Error {
            return error
        } catch {
            Issue.record("unexpected \(error)")
            return nil
        }
    }

    @Test func commonVerifiesIDTokensOfTwoTenantsAndAPersonalAccount() async throws {
        let local = try EntraProvider.load()
        let transport = CurlTransport()
        defer { Task { await transport.shutdown() } }
        let provider = try await Self.microsoft(local, transport: transport)
        #expect(provider.configuration.issuer == "\(local.base)/{tenantid}/v2.0")
        #expect(provider.configuration.openID?.jwksURI.absoluteString == "\(local.base)/common/discovery/v2.0/keys")
        for (login, tenant) in [
            ("alice@contoso.example", "contoso"), ("bob@fabrikam.example", "fabrikam"), ("carol@outlook.example", "consumers"),
        ] {
            let token = try await Self.signIn(provider.client(account: login), login, at: local, transport: transport)
            let idToken = try #require(token.idToken)
            #expect(idToken.issuer == local.tenantIssuer(tenant))
            #expect(idToken.tenantID == local.tenant(tenant))
            #expect(idToken.preferredUsername == login)
        }
    }

    @Test func organizationsAndConsumersHaveTheTemplateToo() async throws {
        let local = try EntraProvider.load()
        let transport = CurlTransport()
        defer { Task { await transport.shutdown() } }
        let organizations = try await Self.microsoft(local, tenant: "organizations", transport: transport)
        let alice = try await Self.signIn(organizations.client(), "alice@contoso.example", at: local, transport: transport)
        #expect(alice.idToken?.tenantID == local.tenant("contoso"))
        let consumers = try await Self.microsoft(local, tenant: "consumers", transport: transport)
        let carol = try await Self.signIn(consumers.client(), "carol@outlook.example", at: local, transport: transport)
        #expect(carol.idToken?.issuer == local.tenantIssuer("consumers"))
    }

    @Test func withoutTheRuleTheTemplatedDocumentIsRefusedAsToday() async throws {
        let local = try EntraProvider.load()
        let transport = CurlTransport()
        defer { Task { await transport.shutdown() } }
        let error = await #expect(throws: OAuth2Error.self) { _ = try await Self.microsoft(local, rule: .exact, transport: transport) }
        #expect(error?.code == .issuerMismatch)
    }

    @Test func aTenantOutsideTheAllowedListIsRefused() async throws {
        let local = try EntraProvider.load()
        let transport = CurlTransport()
        defer { Task { await transport.shutdown() } }
        let rule = IssuerRule.template(placeholder: "{tenantid}", claim: "tid", allowed: [local.tenant("contoso")])
        let provider = try await Self.microsoft(local, rule: rule, transport: transport)
        let alice = try await Self.signIn(provider.client(account: "alice"), "alice@contoso.example", at: local, transport: transport)
        #expect(alice.idToken?.tenantID == local.tenant("contoso"))
        let bob = await Self.signInError(provider.client(account: "bob"), "bob@fabrikam.example", at: local, transport: transport)
        #expect(bob?.code == .issuerMismatch)
        let carol = await Self.signInError(provider.client(account: "carol"), "carol@outlook.example", at: local, transport: transport)
        #expect(carol?.code == .issuerMismatch)
        // Nothing was stored for them.
        #expect(try await provider.client(account: "bob").idToken() == nil)
    }

    @Test func anIssOfAnotherTenantThanTheTokensTidIsRefused() async throws {
        let local = try EntraProvider.load()
        let transport = CurlTransport()
        defer { Task { await transport.shutdown() } }
        let provider = try await Self.microsoft(local, transport: transport)
        let error = await Self.signInError(provider.client(), "mallory@contoso.example", at: local, transport: transport)
        #expect(error?.code == .issuerMismatch)
    }

    @Test func aRefreshKeepsTheTenantAndRefusesAnotherTenantsToken() async throws {
        let local = try EntraProvider.load()
        let transport = CurlTransport()
        defer { Task { await transport.shutdown() } }
        let provider = try await Self.microsoft(local, transport: transport)
        let client = provider.client(account: "alice-refresh")
        let signedIn = try await Self.signIn(client, "alice@contoso.example", at: local, transport: transport)
        let refreshed = try await client.refreshAccessToken()
        #expect(refreshed.idToken?.issuer == signedIn.idToken?.issuer)
        #expect(refreshed.idToken?.subject == signedIn.idToken?.subject)
        #expect(refreshed.refreshToken != signedIn.refreshToken)
        // The provider answers the next refresh with another tenant's ID token: refused, never the signed-in user.
        try await local.answerNextRefresh(as: "bob@fabrikam.example", transport: transport)
        _ = try? await client.refreshAccessToken()
        let error = await #expect(throws: OAuth2Error.self) { _ = try await client.idToken() }
        #expect(error?.code == .subjectMismatch)
    }

    @Test func aTenantsOwnEndpointKeepsItsExactIssuer() async throws {
        let local = try EntraProvider.load()
        let transport = CurlTransport()
        defer { Task { await transport.shutdown() } }
        let provider = try await Self.microsoft(local, tenant: local.tenant("contoso"), rule: .exact, transport: transport)
        #expect(provider.configuration.issuer == local.tenantIssuer("contoso"))
        let alice = try await Self.signIn(provider.client(), "alice@contoso.example", at: local, transport: transport)
        #expect(alice.idToken?.issuer == local.tenantIssuer("contoso"))
    }

    @Test func logoutUsesTheEndSessionEndpointOfTheTemplatedDocument() async throws {
        let local = try EntraProvider.load()
        let transport = CurlTransport()
        defer { Task { await transport.shutdown() } }
        let provider = try await Self.microsoft(local, transport: transport)
        let client = provider.client()
        _ = try await Self.signIn(client, "bob@fabrikam.example", at: local, transport: transport)
        let url = try #require(try await client.endSessionURL(postLogoutRedirectURI: EntraProvider.redirectURI))
        #expect(url.absoluteString.hasPrefix("\(local.base)/common/oauth2/v2.0/logout?"))
        #expect(url.absoluteString.contains("id_token_hint="))
        try await client.logout()
        #expect(try await client.idToken() == nil)
    }

    // MARK: Google

    static func google(_ local: EntraProvider, rule: IssuerRule, hostedDomains: Set<String>? = nil, transport: CurlTransport) async throws
        -> OAuth2Provider
    {
        var configuration = try await OAuth2Configuration.discover(
            issuer: local.googleIssuer, clientID: local.clientID, clientSecret: Secret(local.clientSecret), transport: transport,
            issuerRule: rule)
        configuration.openID?.allowedHostedDomains = hostedDomains
        return try OAuth2Provider(configuration: configuration, transport: transport)
    }

    @Test func googlesTwoSpellingsSignInAndAThirdIsRefused() async throws {
        let local = try EntraProvider.load()
        let transport = CurlTransport()
        defer { Task { await transport.shutdown() } }
        let provider = try await Self.google(local, rule: .anyOf([local.googleIssuerBare]), transport: transport)
        let ann = try await Self.signIn(provider.client(account: "ann"), "ann@example.com", at: local, transport: transport)
        #expect(ann.idToken?.issuer == local.googleIssuer)
        #expect(ann.idToken?.hostedDomain == "example.com")
        let ben = try await Self.signIn(provider.client(account: "ben"), "ben@gmail.example", at: local, transport: transport)
        #expect(ben.idToken?.issuer == local.googleIssuerBare)
        #expect(ben.idToken?.hostedDomain == nil)
        let zed = await Self.signInError(provider.client(account: "zed"), "zed@example.com", at: local, transport: transport)
        #expect(zed?.code == .issuerMismatch)
    }

    @Test func theSchemelessSpellingIsRefusedWithoutTheRule() async throws {
        let local = try EntraProvider.load()
        let transport = CurlTransport()
        defer { Task { await transport.shutdown() } }
        let provider = try await Self.google(local, rule: .exact, transport: transport)
        _ = try await Self.signIn(provider.client(account: "ann"), "ann@example.com", at: local, transport: transport)
        let ben = await Self.signInError(provider.client(account: "ben"), "ben@gmail.example", at: local, transport: transport)
        #expect(ben?.code == .issuerMismatch)
    }

    @Test func aRequiredHostedDomainRefusesConsumerAccounts() async throws {
        let local = try EntraProvider.load()
        let transport = CurlTransport()
        defer { Task { await transport.shutdown() } }
        let provider = try await Self.google(
            local, rule: .anyOf([local.googleIssuerBare]), hostedDomains: ["example.com"], transport: transport)
        _ = try await Self.signIn(provider.client(account: "ann"), "ann@example.com", at: local, transport: transport)
        let ben = await Self.signInError(provider.client(account: "ben"), "ben@gmail.example", at: local, transport: transport)
        #expect(ben?.code == .hostedDomainMismatch)
    }
}
