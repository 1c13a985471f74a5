import Foundation
import OAuth2
import Testing

/// The Dynamic RP certification profile (the suite's OIDCCClientDynamicTestPlan:
/// `response_type=code`, `client_registration=dynamic_client`). Its discovery
/// (WebFinger too), `none`, rotation and signed userinfo modules are in the
/// other suites; `request_uri` signed with `none` does not apply (README.md);
/// `request_uri` signed with RS256 is in +RequestURI.swift.
@Suite(.enabled(if: ConformanceProvider.isConfigured, ConformanceProvider.requirement))
struct OIDCCClientDynamicTests {
    /// "The client is expected to register using the registration endpoint":
    /// the registered client (``ClientRegistrar``, RFC 7591) then signs in,
    /// its ID token for it.
    @Test("oidcc-client-test-dynamic-registration") func theClientRegistersThenSignsIn() async throws {
        let run = try ConformanceProvider.run("oidcc-client-test-dynamic-registration")
        let metadata = try await MetadataCache(transport: ModuleRun.transport).metadata(issuer: run.issuer)
        #expect(metadata.registrationEndpoint?.absoluteString == run.issuer + "/register")
        let registration = try await ClientRegistrar(metadata: metadata, transport: ModuleRun.transport).register(
            ClientMetadata(redirectURIs: [ModuleRun.redirectURI], clientName: "oidf-rp", tokenEndpointAuthMethod: "client_secret_basic")
        )
        let configuration = try OAuth2Configuration(
            metadata: metadata, clientID: registration.clientID, clientSecret: registration.clientSecret)
        let token = try await run.signIn(try await run.provider(configuration))
        #expect(token.idToken?.audience == [registration.clientID])
        #expect(try await run.calls().prefix(2) == ["discovery", "register"])
    }
}
