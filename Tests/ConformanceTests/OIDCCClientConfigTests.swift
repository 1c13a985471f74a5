import Foundation
import OAuth2
import OAuth2Testing
import Testing

/// The Config RP certification profile (the suite's OIDCCClientConfigTestPlan,
/// `response_type=code`): discovery, the key set it names, and signing-key
/// rotation. `oidcc-client-test-idtoken-sig-none`, also in this plan, is in
/// ``OIDCCClientBasicTests``.
///
/// The Dynamic plan's WebFinger modules, discovery modules of the suite's
/// `config` package too, are here.
@Suite(.enabled(if: ConformanceProvider.isConfigured, ConformanceProvider.requirement))
struct OIDCCClientConfigTests {
    /// "The client is expected to retrieve and use the OpenID Provider
    /// Configuration Information".
    @Test("oidcc-client-test-discovery-openid-config") func theDiscoveredConfigurationIsUsed() async throws {
        let run = try ConformanceProvider.run("oidcc-client-test-discovery-openid-config")
        let configuration = try await run.discover()
        #expect(configuration.issuer == run.issuer)
        #expect(configuration.tokenEndpoint.absoluteString == run.issuer + "/token")
        #expect(configuration.openID?.userinfoEndpoint?.absoluteString == run.issuer + "/userinfo")
        _ = try await run.signIn(try await run.provider(configuration))
        #expect(try await run.calls() == ["discovery", "authorization", "token", "jwks"])
    }

    /// "send a request to jwks_uri obtained from OP configuration. The
    /// jwks_uri endpoint changes every execution": op.py serves the key set
    /// at `jwks<random>` only, so a client that guessed the path would fail.
    @Test("oidcc-client-test-discovery-jwks-uri-keys") func theKeySetIsFetchedFromTheDiscoveredURI() async throws {
        let run = try ConformanceProvider.run("oidcc-client-test-discovery-jwks-uri-keys")
        let provider = try await run.provider()
        let jwksURI = try #require(provider.configuration.openID?.jwksURI.absoluteString)
        #expect(jwksURI.hasPrefix(run.issuer + "/jwks") && jwksURI != run.issuer + "/jwks")
        #expect(try await run.signIn(provider).idToken != nil)
        #expect(try await run.calls().contains("jwks"))
    }

    /// "detect that the issuer in the provider configuration does not match"
    /// and stop: the authorization endpoint is never reached.
    @Test("oidcc-client-test-discovery-issuer-mismatch") func aDocumentForAnotherIssuerIsRefused() async throws {
        let run = try ConformanceProvider.run("oidcc-client-test-discovery-issuer-mismatch")
        let error = await #expect(throws: OAuth2Error.self) { try await run.discover() }
        #expect(error?.code == .issuerMismatch)
        #expect(try await run.calls() == ["discovery"])
    }

    /// "The client is expected to use WebFinger (RFC7033) and OpenID Provider
    /// Issuer Discovery to determine the location of the OpenID Provider
    /// configuration … using acct URI syntax as user input identifier",
    /// `acct:ALIAS.MODULE@HOST`: the issuer op.py's WebFinger answer names (a
    /// random last segment, as the suite's) is discovered, and the sign-in
    /// goes on with it as the other Config modules do.
    @Test("oidcc-client-test-discovery-webfinger-acct") func theIssuerIsFoundByWebFingerFromAnAcctIdentifier() async throws {
        let run = try ConformanceProvider.run("oidcc-client-test-discovery-webfinger-acct")
        // The run's issuer is http://HOST/ALIAS/MODULE.
        let parts = run.issuer.split(separator: "/")
        try await run.signInByWebFinger("acct:\(parts[2]).\(run.module)@\(parts[1])")
    }

    /// The same from "URL syntax as user input identifier", the suite's
    /// `https://HOST/ALIAS/MODULE`: op.py is loopback `http`, so `http://`
    /// here; the lookup itself goes to the identifier's host, over `http`
    /// only because it is loopback.
    @Test("oidcc-client-test-discovery-webfinger-url") func theIssuerIsFoundByWebFingerFromAURL() async throws {
        let run = try ConformanceProvider.run("oidcc-client-test-discovery-webfinger-url")
        try await run.signInByWebFinger(run.issuer)
    }

    /// "Keys will be rotated right before signing the id_token so the client
    /// needs to refetch the jwks to validate the signature": the library
    /// fetches the set when it first verifies, after the token response.
    @Test("oidcc-client-test-signing-key-rotation-just-before-signing") func keysRotatedBeforeSigningAreFetched() async throws {
        let run = try ConformanceProvider.run("oidcc-client-test-signing-key-rotation-just-before-signing")
        #expect(try await run.signIn(try await run.provider()).idToken != nil)
        #expect(try await run.calls() == ["discovery", "authorization", "token", "jwks"])
    }

    /// "Keys will be rotated after the first ID token is issued so the client
    /// needs to refetch the jwks to validate the second ID token" (the suite
    /// rotates them when the second authorization request comes): the second
    /// ID token names a key the cached set lacks, and the set is fetched again.
    /// The library refetches at most once per `keySetRefetchInterval` (30 s,
    /// against forged `kid`s, as jose's `cooldownDuration` in openid-client):
    /// the second sign-in comes after it here; see the next test for one within.
    @Test("oidcc-client-test-signing-key-rotation") func aKeyRotatedBetweenSignInsIsFetched() async throws {
        let run = try ConformanceProvider.run("oidcc-client-test-signing-key-rotation")
        let clock = ManualClock(Date())
        let provider = try await run.provider(clock: clock)
        _ = try await run.signIn(provider)
        clock.advance(by: .seconds(31))
        #expect(try await run.signIn(provider).idToken != nil)
        #expect(try await run.calls().filter { $0 == "jwks" }.count == 2)
    }

    /// Not a module: the limit the previous test steps over. Within the
    /// refetch interval a token naming an unknown key is refused without a
    /// fetch (`unknown_signing_key`); once it has passed, the same provider
    /// verifies the next one.
    @Test func aKeyRotatedWithinTheRefetchIntervalWaitsForIt() async throws {
        let run = try ConformanceProvider.run("oidcc-client-test-signing-key-rotation")
        let clock = ManualClock(Date())
        let provider = try await run.provider(clock: clock)
        _ = try await run.signIn(provider)
        let error = await #expect(throws: OAuth2Error.self) { try await run.signIn(provider) }
        #expect(error?.code == .unknownSigningKey)
        #expect(try await run.calls().filter { $0 == "jwks" }.count == 1)
        clock.advance(by: .seconds(31))
        #expect(try await run.signIn(provider).idToken != nil)
    }

    /// Not a module either: an app that trusts its provider's key set
    /// endpoint to take the load turns the limit off, and the module passes
    /// at once.
    @Test func withoutARefetchIntervalARotatedKeyIsFetchedAtOnce() async throws {
        let run = try ConformanceProvider.run("oidcc-client-test-signing-key-rotation")
        var configuration = try await run.discover()
        configuration.openID?.keySetRefetchInterval = .zero
        let provider = try await run.provider(configuration)
        _ = try await run.signIn(provider)
        #expect(try await run.signIn(provider).idToken != nil)
        #expect(try await run.calls().filter { $0 == "jwks" }.count == 2)
    }
}

extension ModuleRun {
    /// The WebFinger modules' flow: from `identifier` to the issuer
    /// (``OpenIDIssuer/webFinger(_:rules:transport:)``, allowed to ask a
    /// loopback host), its discovery, and a sign-in; op.py must have seen
    /// the WebFinger request with the identifier and the issuer `rel`, then
    /// the discovery of the issuer it named, then the flow.
    func signInByWebFinger(_ identifier: String) async throws {
        let configuration = try await OAuth2Configuration.discover(
            webFinger: identifier, clientID: Self.clientID, clientSecret: Self.clientSecret,
            rules: DiscoveryRules(allowsPrivateAuthorizationServers: true), transport: Self.transport)
        let issuer = try #require(configuration.issuer)
        #expect(issuer.hasPrefix(self.issuer + "/") && issuer.count == self.issuer.count + 11)
        #expect(try await signIn(try await provider(configuration)).idToken?.issuer == issuer)
        let log = try await log()
        #expect(log.map(\.event) == ["webfinger", "discovery", "authorization", "token", "jwks"])
        #expect(log.first?["resource"] as? String == identifier)
        #expect(log.first?["rel"] as? String == OpenIDIssuer.linkRelation)
    }
}
