import Foundation
import OAuth2Testing
import Testing
@testable import OAuth2

/// The issuer rules: Microsoft Entra ID's `{tenantid}` issuer template and
/// Google's two `iss` spellings, as data every check reads (discovery, the
/// redirect's `iss`, ID tokens, refreshed ID tokens); `.exact` for everyone else.
///
/// Microsoft's behaviour followed: "OpenID Connect on the Microsoft identity
/// platform" (the `common`/`organizations`/`consumers` discovery document's
/// issuer is `https://login.microsoftonline.com/{tenantid}/v2.0`), "Microsoft
/// identity platform ID tokens" (`iss` names the user's tenant, `tid` is its
/// GUID; personal accounts have tid 9188040d-6c67-4c5b-b112-36a304b66dad) and
/// "Validate tokens — multi-tenant applications" (`iss` is the template filled
/// with `tid`, optionally restricted to the app's tenants). Google's: the
/// "Authenticate with a backend server" page of Google Identity (`iss` is
/// `https://accounts.google.com` or `accounts.google.com`; `hd` names the
/// Workspace domain).
@Suite struct IssuerRuleTests {
    static let template = "https://login.microsoftonline.com/{tenantid}/v2.0"
    static let contoso = "72f988bf-86f1-41af-91ab-2d7cd011db47"
    static let fabrikam = "3c6a1b8e-0d2f-4a6e-9b1c-5f7e8d9a0b1c"
    static let consumers = "9188040d-6c67-4c5b-b112-36a304b66dad"
    static let entra = IssuerRule.template(placeholder: "{tenantid}", claim: "tid")
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    static func verifier(issuer: String = template, rule: IssuerRule = entra, settings: OpenIDSettings? = nil) -> IDTokenVerifier {
        IDTokenVerifier(
            settings: settings ?? OpenIDSettings(jwksURI: URL(string: "https://login.microsoftonline.com/common/discovery/v2.0/keys")!),
            issuer: issuer, clientID: "app", issuerRule: rule)
    }

    static func token(iss: String, tid: String?, sub: String = "user-1", _ more: [String: JSONValue] = [:]) throws -> IDToken {
        var claims: [String: JSONValue] = [
            "iss": .string(iss), "sub": .string(sub), "aud": .string("app"),
            "exp": .number(now.timeIntervalSince1970 + 300), "iat": .number(now.timeIntervalSince1970),
        ]
        if let tid { claims["tid"] = .string(tid) }
        for (name, value) in more { claims[name] = value }
        return try IDToken(claims: claims)
    }

    static func tenantIssuer(_ tid: String) -> String { "https://login.microsoftonline.com/\(tid)/v2.0" }

    /// The code the verifier refuses `token` with, or `nil` when it accepts it.
    func code(_ verifier: IDTokenVerifier, _ token: IDToken, expectation: IDTokenVerifier.Expectation = .any) -> OAuth2Error.Code? {
        do {
            try verifier.checkClaims(token, algorithm: .rs256, expectation: expectation, accessToken: nil, now: Self.now)
            return nil
        } catch {
            return error.code
        }
    }

    // MARK: Microsoft's template

    @Test func aTemplateAcceptsTokensOfEveryTenantFilledWithTheirOwnTid() throws {
        let verifier = Self.verifier()
        for tid in [Self.contoso, Self.fabrikam, Self.consumers] {
            #expect(code(verifier, try Self.token(iss: Self.tenantIssuer(tid), tid: tid)) == nil)
        }
    }

    @Test func aTemplateRefusesAnIssOfAnotherTenantThanTheTokensTid() throws {
        let verifier = Self.verifier()
        #expect(code(verifier, try Self.token(iss: Self.tenantIssuer(Self.fabrikam), tid: Self.contoso)) == .issuerMismatch)
        // The template itself, another host, or the v1.0 issuer are not a tenant's issuer.
        #expect(code(verifier, try Self.token(iss: Self.template, tid: Self.contoso)) == .issuerMismatch)
        #expect(
            code(verifier, try Self.token(iss: "https://login.evil.example/\(Self.contoso)/v2.0", tid: Self.contoso)) == .issuerMismatch)
        #expect(code(verifier, try Self.token(iss: "https://sts.windows.net/\(Self.contoso)/", tid: Self.contoso)) == .issuerMismatch)
    }

    @Test func aTemplateNeedsATidThatIsAGUID() throws {
        let verifier = Self.verifier()
        #expect(code(verifier, try Self.token(iss: Self.tenantIssuer(Self.contoso), tid: nil)) == .issuerMismatch)
        #expect(code(verifier, try Self.token(iss: Self.tenantIssuer("common"), tid: "common")) == .issuerMismatch)
        #expect(code(verifier, try Self.token(iss: "https://login.microsoftonline.com/x/y/v2.0", tid: "x/y")) == .issuerMismatch)
        let numeric = try Self.token(iss: Self.tenantIssuer(Self.contoso), tid: nil, ["tid": .number(1)])
        #expect(code(verifier, numeric) == .issuerMismatch)
    }

    @Test func aTemplateWithAllowedTenantsRefusesEveryOtherTenant() throws {
        let verifier = Self.verifier(rule: .template(placeholder: "{tenantid}", claim: "tid", allowed: [Self.contoso.uppercased()]))
        #expect(code(verifier, try Self.token(iss: Self.tenantIssuer(Self.contoso), tid: Self.contoso)) == nil)
        #expect(code(verifier, try Self.token(iss: Self.tenantIssuer(Self.fabrikam), tid: Self.fabrikam)) == .issuerMismatch)
        #expect(code(verifier, try Self.token(iss: Self.tenantIssuer(Self.consumers), tid: Self.consumers)) == .issuerMismatch)
    }

    @Test func aRefreshedTokenOfAnotherTenantIsNotTheSameSignIn() throws {
        let verifier = Self.verifier()
        let signedIn = try Self.token(iss: Self.tenantIssuer(Self.contoso), tid: Self.contoso)
        let sameTenant = try Self.token(iss: Self.tenantIssuer(Self.contoso), tid: Self.contoso)
        #expect(code(verifier, sameTenant, expectation: .refresh(previous: signedIn)) == nil)
        // Same sub, another tenant: a guest of another directory is another user.
        let otherTenant = try Self.token(iss: Self.tenantIssuer(Self.fabrikam), tid: Self.fabrikam)
        #expect(code(verifier, otherTenant, expectation: .refresh(previous: signedIn)) == .subjectMismatch)
    }

    @Test func exactStaysExactForAnIssuerWithoutTheRule() throws {
        // Without the rule, the template is just a string no token names.
        let verifier = Self.verifier(rule: .exact)
        #expect(code(verifier, try Self.token(iss: Self.tenantIssuer(Self.contoso), tid: Self.contoso)) == .issuerMismatch)
        let tenant = Self.verifier(issuer: Self.tenantIssuer(Self.contoso), rule: .exact)
        #expect(code(tenant, try Self.token(iss: Self.tenantIssuer(Self.contoso), tid: Self.contoso)) == nil)
        #expect(code(tenant, try Self.token(iss: Self.tenantIssuer(Self.fabrikam), tid: Self.fabrikam)) == .issuerMismatch)
    }

    @Test func discoveryAcceptsTheTemplateOnlyWhenAskedAndOnlyForItsOwnLocation() async throws {
        let document = """
            {"issuer": "https://login.microsoftonline.com/{tenantid}/v2.0",
             "authorization_endpoint": "https://login.microsoftonline.com/common/oauth2/v2.0/authorize",
             "token_endpoint": "https://login.microsoftonline.com/common/oauth2/v2.0/token",
             "jwks_uri": "https://login.microsoftonline.com/common/discovery/v2.0/keys",
             "end_session_endpoint": "https://login.microsoftonline.com/common/oauth2/v2.0/logout",
             "id_token_signing_alg_values_supported": ["RS256"]}
            """
        let transport = CannedTransport()
        transport.respond { _ in HTTPTransportResponse(status: 200, headers: [.contentType: "application/json"], body: Data(document.utf8))
        }
        let exact = await #expect(throws: OAuth2Error.self) {
            _ = try await OAuth2Configuration.discover(
                issuer: "https://login.microsoftonline.com/common/v2.0", clientID: "app", transport: transport)
        }
        #expect(exact?.code == .issuerMismatch)
        let configuration = try await OAuth2Configuration.discover(
            issuer: "https://login.microsoftonline.com/common/v2.0", clientID: "app", transport: transport, issuerRule: Self.entra)
        #expect(configuration.issuer == Self.template)
        #expect(configuration.issuerRule == Self.entra)
        #expect(configuration.openID?.jwksURI.absoluteString == "https://login.microsoftonline.com/common/discovery/v2.0/keys")
        // A document for another host or another path is not this location's, template or not.
        for location in ["https://login.evil.example/common/v2.0", "https://login.microsoftonline.com/common/v1.0"] {
            let error = await #expect(throws: OAuth2Error.self) {
                _ = try await AuthorizationServerMetadata.discover(issuer: location, issuerRule: Self.entra, transport: transport)
            }
            #expect(error?.code == .issuerMismatch)
        }
    }

    @Test func aTemplatedDocumentIsAcceptedOnlyForOnePathSegmentInThePlaceholdersPlace() {
        let requested = "https://login.microsoftonline.com/common/v2.0"
        #expect(Self.entra.acceptsMetadataIssuer(Self.template, requested: requested))
        #expect(
            Self.entra.acceptsMetadataIssuer(Self.template, requested: "https://login.microsoftonline.com/contoso.onmicrosoft.com/v2.0"))
        for location in [
            "https://login.microsoftonline.com//v2.0", "https://login.microsoftonline.com/a/b/v2.0",
            "https://login.microsoftonline.com/a%2Fb/v2.0", "https://login.microsoftonline.com/a?b/v2.0",
            "https://login.microsoftonline.com/v2.0", "https://login.microsoftonline.com/common/v2.0/",
            "https://login.microsoftonline.com.evil.example/common/v2.0",
        ] {
            #expect(!Self.entra.acceptsMetadataIssuer(Self.template, requested: location), "\(location)")
        }
        // Only a template rule accepts a template; a document naming another issuer is never accepted.
        #expect(!IssuerRule.exact.acceptsMetadataIssuer(Self.template, requested: requested))
        #expect(!IssuerRule.anyOf([Self.template]).acceptsMetadataIssuer(Self.template, requested: requested))
        #expect(!Self.entra.acceptsMetadataIssuer(Self.tenantIssuer(Self.contoso), requested: requested))
    }

    @Test func theCacheServesATemplatedDocumentOnlyToATemplateRule() async throws {
        let transport = CannedTransport()
        let document = #"{"issuer": "https://id.example/{tenantid}/v2.0", "token_endpoint": "https://id.example/token"}"#
        transport.respond { _ in HTTPTransportResponse(status: 200, headers: [.contentType: "application/json"], body: Data(document.utf8))
        }
        let cache = MetadataCache(transport: transport)
        _ = try await cache.metadata(issuer: "https://id.example/common/v2.0", issuerRule: Self.entra)
        let error = await #expect(throws: OAuth2Error.self) { _ = try await cache.metadata(issuer: "https://id.example/common/v2.0") }
        #expect(error?.code == .issuerMismatch)
    }

    @Test func aRedirectsIssMayNameATenantOfTheTemplateOrBeAbsent() throws {
        let rule = IssuerRule.template(placeholder: "{tenantid}", claim: "tid", allowed: [Self.contoso])
        #expect(rule.acceptsRedirectIssuer(Self.tenantIssuer(Self.contoso), configured: Self.template))
        #expect(!rule.acceptsRedirectIssuer(Self.tenantIssuer(Self.fabrikam), configured: Self.template))
        #expect(!rule.acceptsRedirectIssuer(Self.tenantIssuer("common"), configured: Self.template))
        #expect(!IssuerRule.exact.acceptsRedirectIssuer(Self.tenantIssuer(Self.contoso), configured: Self.template))
        // Microsoft sends no iss in the redirect: with the provider not requiring it, none is fine.
        let pending = PendingAuthorization(
            url: URL(string: "https://login.microsoftonline.com/common/oauth2/v2.0/authorize")!, state: "s-1",
            codeVerifier: Secret("v"), redirectURI: URL(string: "https://app.example/cb")!, scopes: ["openid"],
            expectedIssuer: Self.template, requiresIssuer: false, createdAt: Self.now)
        #expect(throws: Never.self) {
            try RedirectValidator.validate("https://app.example/cb?code=c&state=s-1", pending: pending, issuerRule: rule)
        }
        let other = "https://app.example/cb?code=c&state=s-1&iss=" + Self.tenantIssuer(Self.fabrikam)
        #expect(throws: OAuth2Error.self) { try RedirectValidator.validate(other, pending: pending, issuerRule: rule) }
    }

    @Test func aTemplateRuleIsCheckedWithTheConfiguration() throws {
        func configuration(_ rule: IssuerRule, issuer: String? = Self.template) throws(OAuth2Error) -> OAuth2Configuration {
            var configuration = try OAuth2Configuration(
                clientID: "app", tokenEndpoint: URL(string: "https://id.example/token")!, issuer: issuer)
            configuration.issuerRule = rule
            try configuration.validate()
            return configuration
        }
        #expect(throws: Never.self) { try configuration(Self.entra) }
        for (rule, issuer) in [
            (IssuerRule.template(placeholder: "", claim: "tid"), Self.template),
            (IssuerRule.template(placeholder: "{tenantid}", claim: "tid", allowed: ["contoso"]), Self.template),
            (IssuerRule.template(placeholder: "{tenantid}", claim: "tid"), "https://id.example/{tenantid}/{tenantid}"),
            (IssuerRule.anyOf([""]), "https://accounts.google.com"),
        ] {
            let error = FlowFixtures.error { () throws(OAuth2Error) in _ = try configuration(rule, issuer: issuer) }
            #expect(error?.code == .invalidConfiguration, "\(rule)")
        }
        #expect(
            FlowFixtures.error { () throws(OAuth2Error) in _ = try configuration(Self.entra, issuer: nil) }?.code == .invalidConfiguration)
    }

    // MARK: Google's two spellings

    static let google = IssuerRule.anyOf(["accounts.google.com"])

    @Test func googlesTwoSpellingsAreAcceptedAndNothingLooser() throws {
        let verifier = Self.verifier(issuer: "https://accounts.google.com", rule: Self.google)
        #expect(code(verifier, try Self.token(iss: "https://accounts.google.com", tid: nil)) == nil)
        #expect(code(verifier, try Self.token(iss: "accounts.google.com", tid: nil)) == nil)
        for other in [
            "http://accounts.google.com", "https://accounts.google.com/", "ACCOUNTS.GOOGLE.COM", "accounts.google.com.evil.example",
        ] {
            #expect(code(verifier, try Self.token(iss: other, tid: nil)) == .issuerMismatch, "\(other)")
        }
        // The exact rule (every other provider) takes the scheme-less spelling for another issuer.
        let exact = Self.verifier(issuer: "https://accounts.google.com", rule: .exact)
        #expect(code(exact, try Self.token(iss: "accounts.google.com", tid: nil)) == .issuerMismatch)
    }

    @Test func aRefreshMaySwitchBetweenGooglesSpellings() throws {
        let verifier = Self.verifier(issuer: "https://accounts.google.com", rule: Self.google)
        let signedIn = try Self.token(iss: "https://accounts.google.com", tid: nil)
        let refreshed = try Self.token(iss: "accounts.google.com", tid: nil)
        #expect(code(verifier, refreshed, expectation: .refresh(previous: signedIn)) == nil)
        let exact = Self.verifier(issuer: "https://accounts.google.com", rule: .exact)
        #expect(
            !exact.issuerRule.sameIssuer("accounts.google.com", "https://accounts.google.com", configured: "https://accounts.google.com"))
    }

    @Test func theHostedDomainIsExposedAndCanBeRequired() throws {
        var settings = OpenIDSettings(jwksURI: URL(string: "https://www.googleapis.com/oauth2/v3/certs")!)
        settings.allowedHostedDomains = ["example.com"]
        let verifier = Self.verifier(issuer: "https://accounts.google.com", rule: Self.google, settings: settings)
        let workspace = try Self.token(iss: "https://accounts.google.com", tid: nil, ["hd": .string("Example.com")])
        #expect(workspace.hostedDomain == "Example.com")
        #expect(code(verifier, workspace) == nil)
        #expect(code(verifier, try Self.token(iss: "accounts.google.com", tid: nil)) == .hostedDomainMismatch)
        #expect(
            code(verifier, try Self.token(iss: "accounts.google.com", tid: nil, ["hd": .string("other.example")])) == .hostedDomainMismatch)
        #expect(IDTokenVerifier.refusals.contains(.hostedDomainMismatch))
    }
}
