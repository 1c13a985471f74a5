import Foundation
import MutualTLSFixture
import Testing
@testable import OAuth2

@Suite struct AuthorizationServerMetadataTests {
    static let issuer = "https://server.example.com"

    private func parse(_ body: String, status: HTTPResponse.Status = 200, issuer: String = Self.issuer) throws(OAuth2Error)
        -> AuthorizationServerMetadata
    {
        try AuthorizationServerMetadata.parse(FlowFixtures.json(body, status: status), expectedIssuer: issuer)
    }

    private func error(_ body: String, status: HTTPResponse.Status = 200, issuer: String = Self.issuer) -> OAuth2Error? {
        FlowFixtures.error { () throws(OAuth2Error) in try parse(body, status: status, issuer: issuer) }
    }

    private func wellKnown(_ issuer: String) throws(OAuth2Error) -> String {
        try AuthorizationServerMetadata.wellKnownURL(forIssuer: issuer).absoluteString
    }

    @Test func parsesTheRFC8414Example() throws {
        let metadata = try parse(
            """
            {
             "issuer": "https://server.example.com",
             "authorization_endpoint": "https://server.example.com/authorize",
             "token_endpoint": "https://server.example.com/token",
             "token_endpoint_auth_methods_supported": ["client_secret_basic", "private_key_jwt"],
             "token_endpoint_auth_signing_alg_values_supported": ["RS256", "ES256"],
             "userinfo_endpoint": "https://server.example.com/userinfo",
             "jwks_uri": "https://server.example.com/jwks.json",
             "registration_endpoint": "https://server.example.com/register",
             "scopes_supported": ["openid", "profile", "email", "address", "phone", "offline_access"],
             "response_types_supported": ["code", "code token"],
             "service_documentation": "http://server.example.com/service_documentation.html",
             "ui_locales_supported": ["en-US", "en-GB", "en-CA", "fr-FR", "fr-CA"]
            }
            """)
        #expect(metadata.issuer == Self.issuer)
        #expect(metadata.authorizationEndpoint == URL(string: "https://server.example.com/authorize"))
        #expect(metadata.tokenEndpoint == URL(string: "https://server.example.com/token"))
        #expect(metadata.revocationEndpoint == nil)
        #expect(metadata.tokenEndpointAuthMethodsSupported == ["client_secret_basic", "private_key_jwt"])
        #expect(metadata.codeChallengeMethodsSupported == [])
        #expect(metadata.authorizationResponseIssParameterSupported == false)
    }

    @Test func readsTheOtherFieldsTheClientUses() throws {
        let metadata = try parse(
            """
            {"issuer":"https://server.example.com","token_endpoint":"https://server.example.com/token",
             "revocation_endpoint":"https://server.example.com/revoke",
             "device_authorization_endpoint":"https://server.example.com/device",
             "authorization_response_iss_parameter_supported":true,
             "code_challenge_methods_supported":["S256"]}
            """)
        #expect(metadata.revocationEndpoint == URL(string: "https://server.example.com/revoke"))
        #expect(metadata.deviceAuthorizationEndpoint == URL(string: "https://server.example.com/device"))
        #expect(metadata.authorizationResponseIssParameterSupported)
        #expect(metadata.codeChallengeMethodsSupported == ["S256"])
    }

    @Test func readsThePushedAndSignedRequestFields() throws {
        let metadata = try parse(
            """
            {"issuer":"https://server.example.com","token_endpoint":"https://server.example.com/token",
             "pushed_authorization_request_endpoint":"https://server.example.com/par",
             "require_pushed_authorization_requests":true,
             "request_object_signing_alg_values_supported":["PS256","ES256"],
             "require_signed_request_object":true}
            """)
        #expect(metadata.pushedAuthorizationRequestEndpoint == URL(string: "https://server.example.com/par"))
        #expect(metadata.requirePushedAuthorizationRequests)
        #expect(metadata.requestObjectSigningAlgValuesSupported == ["PS256", "ES256"])
        #expect(metadata.requireSignedRequestObject)
        let roundTripped = try JSONDecoder().decode(AuthorizationServerMetadata.self, from: JSONEncoder().encode(metadata))
        #expect(roundTripped == metadata)

        let absent = try parse(#"{"issuer":"https://server.example.com"}"#)
        #expect(absent.pushedAuthorizationRequestEndpoint == nil)
        #expect(!absent.requirePushedAuthorizationRequests)
        #expect(!absent.requireSignedRequestObject)
    }

    @Test func refusesPushedAndSignedRequestFieldsOfTheWrongType() {
        let issuer = #""issuer":"https://server.example.com""#
        #expect(error("{\(issuer),\"pushed_authorization_request_endpoint\":\"http://server.example.com/par\"}")?.code == .insecureEndpoint)
        #expect(error("{\(issuer),\"pushed_authorization_request_endpoint\":7}")?.code == .invalidTokenResponse)
        #expect(error("{\(issuer),\"require_pushed_authorization_requests\":\"true\"}")?.code == .invalidTokenResponse)
        #expect(error("{\(issuer),\"require_signed_request_object\":1}")?.code == .invalidTokenResponse)
        #expect(error("{\(issuer),\"request_object_signing_alg_values_supported\":\"RS256\"}")?.code == .invalidTokenResponse)
    }

    @Test func readsWhetherRequestURIsAreTakenAndDefaultsToYes() throws {
        let refusing = try parse(
            #"{"issuer":"https://server.example.com","token_endpoint":"https://server.example.com/token","request_uri_parameter_supported":false}"#
        )
        #expect(!refusing.requestURIParameterSupported)
        #expect(try JSONDecoder().decode(AuthorizationServerMetadata.self, from: JSONEncoder().encode(refusing)) == refusing)
        // OpenID Connect Discovery §3: true when the provider does not say.
        let silent = try parse(#"{"issuer":"https://server.example.com","token_endpoint":"https://server.example.com/token"}"#)
        #expect(silent.requestURIParameterSupported)
        #expect(
            try JSONDecoder().decode(AuthorizationServerMetadata.self, from: Data(#"{"issuer":"https://s.example"}"#.utf8))
                .requestURIParameterSupported)
        #expect(try OAuth2Configuration(metadata: refusing, clientID: "client-1").requestURIParameterSupported == false)
        #expect(try OAuth2Configuration(metadata: silent, clientID: "client-1").requestURIParameterSupported)
        #expect(
            error(#"{"issuer":"https://server.example.com","request_uri_parameter_supported":"false"}"#)?.code == .invalidTokenResponse)
    }

    @Test func readsTheDPoPAlgorithms() throws {
        let metadata = try parse(
            #"{"issuer":"https://server.example.com","dpop_signing_alg_values_supported":["ES256","RS256"]}"#)
        #expect(metadata.dpopSigningAlgValuesSupported == ["ES256", "RS256"])
        #expect(try parse(#"{"issuer":"https://server.example.com"}"#).dpopSigningAlgValuesSupported == [])
        #expect(
            error(#"{"issuer":"https://server.example.com","dpop_signing_alg_values_supported":"ES256"}"#)?.code == .invalidTokenResponse)
        let data = try JSONEncoder().encode(metadata)
        #expect(String(decoding: data, as: UTF8.self).contains("dpop_signing_alg_values_supported"))
        #expect(try JSONDecoder().decode(AuthorizationServerMetadata.self, from: data) == metadata)
    }

    @Test func refusesAnotherIssuer() {
        #expect(
            error(#"{"issuer":"https://evil.example.com","token_endpoint":"https://server.example.com/token"}"#)?.code == .issuerMismatch)
        #expect(
            error(#"{"issuer":"https://server.example.com/","token_endpoint":"https://server.example.com/token"}"#)?.code == .issuerMismatch
        )
        #expect(error(#"{"token_endpoint":"https://server.example.com/token"}"#)?.code == .issuerMismatch)
    }

    @Test func refusesAnInsecureEndpoint() {
        #expect(
            error(#"{"issuer":"https://server.example.com","token_endpoint":"http://server.example.com/token"}"#)?.code == .insecureEndpoint
        )
        #expect(
            error(#"{"issuer":"https://server.example.com","revocation_endpoint":"http://server.example.com/revoke"}"#)?.code
                == .insecureEndpoint)
    }

    @Test func acceptsLoopbackHTTPEndpoints() throws {
        let metadata = try parse(
            #"{"issuer":"http://127.0.0.1:8000","token_endpoint":"http://127.0.0.1:8000/o/token/"}"#, issuer: "http://127.0.0.1:8000")
        #expect(metadata.tokenEndpoint == URL(string: "http://127.0.0.1:8000/o/token/"))
    }

    @Test func refusesFieldsOfTheWrongType() {
        #expect(error(#"{"issuer":"https://server.example.com","token_endpoint":5}"#)?.code == .invalidTokenResponse)
        #expect(
            error(#"{"issuer":"https://server.example.com","authorization_response_iss_parameter_supported":"yes"}"#)?.code
                == .invalidTokenResponse)
        #expect(error(#"{"issuer":"https://server.example.com","code_challenge_methods_supported":"S256"}"#)?.code == .invalidTokenResponse)
        #expect(error("[]")?.code == .invalidTokenResponse)
    }

    @Test func statusRulesApply() {
        #expect(error("<html>not found</html>", status: 404)?.code == .httpError)
        #expect(error("", status: 301)?.code == .unexpectedRedirect)
    }

    @Test func roundTripsThroughJSONWithTheRFCFieldNames() throws {
        let metadata = AuthorizationServerMetadata(
            issuer: Self.issuer, tokenEndpoint: URL(string: "https://server.example.com/token"),
            authorizationResponseIssParameterSupported: true)
        let data = try JSONEncoder().encode(metadata)
        #expect(String(decoding: data, as: UTF8.self).contains("authorization_response_iss_parameter_supported"))
        #expect(try JSONDecoder().decode(AuthorizationServerMetadata.self, from: data) == metadata)
    }

    @Test func wellKnownURLOfAnIssuerWithoutPath() throws {
        #expect(try wellKnown("https://server.example.com") == "https://server.example.com/.well-known/oauth-authorization-server")
        #expect(try wellKnown("https://server.example.com/") == "https://server.example.com/.well-known/oauth-authorization-server")
    }

    @Test func wellKnownURLInsertsBetweenHostAndPath() throws {
        #expect(
            try wellKnown("https://server.example.com/issuer1")
                == "https://server.example.com/.well-known/oauth-authorization-server/issuer1")
        #expect(
            try wellKnown("https://server.example.com/realms/acme/")
                == "https://server.example.com/.well-known/oauth-authorization-server/realms/acme")
        #expect(try wellKnown("http://127.0.0.1:8000/o") == "http://127.0.0.1:8000/.well-known/oauth-authorization-server/o")
    }

    @Test func wellKnownURLRefusesBadIssuers() {
        let cases: [(String, OAuth2Error.Code)] = [
            ("server.example.com", .invalidConfiguration),
            ("https://server.example.com?x=1", .invalidConfiguration),
            ("https://server.example.com#x", .invalidConfiguration),
            ("ftp://server.example.com", .invalidConfiguration),
            ("http://server.example.com", .insecureEndpoint),
        ]
        for (issuer, code) in cases {
            let error = FlowFixtures.error { () throws(OAuth2Error) in try wellKnown(issuer) }
            #expect(error?.code == code, "\(issuer)")
        }
    }
}

// MARK: - Mutual TLS endpoint aliases (RFC 8705 §5)

extension AuthorizationServerMetadataTests {
    static let withAliases = """
        {
         "issuer": "https://server.example.com",
         "authorization_endpoint": "https://server.example.com/authorize",
         "token_endpoint": "https://server.example.com/token",
         "revocation_endpoint": "https://server.example.com/revo",
         "device_authorization_endpoint": "https://server.example.com/device",
         "userinfo_endpoint": "https://server.example.com/userinfo",
         "pushed_authorization_request_endpoint": "https://server.example.com/par",
         "jwks_uri": "https://server.example.com/jwks.json",
         "token_endpoint_auth_methods_supported": ["tls_client_auth", "private_key_jwt"],
         "mtls_endpoint_aliases": {
          "token_endpoint": "https://mtls.example.com/token",
          "revocation_endpoint": "https://mtls.example.com/revo",
          "device_authorization_endpoint": "https://mtls.example.com/device",
          "userinfo_endpoint": "https://mtls.example.com/userinfo",
          "introspection_endpoint": "https://mtls.example.com/introspect",
          "pushed_authorization_request_endpoint": "https://mtls.example.com/par"
         }
        }
        """

    @Test func parsesTheMutualTLSEndpointAliases() throws {
        let metadata = try parse(Self.withAliases)
        #expect(metadata.mtlsEndpointAliases["token_endpoint"]?.absoluteString == "https://mtls.example.com/token")
        #expect(metadata.mtlsEndpointAliases["introspection_endpoint"]?.absoluteString == "https://mtls.example.com/introspect")
        #expect(metadata.mtlsEndpointAliases.count == 6)
        #expect(try parse(#"{"issuer": "https://server.example.com"}"#).mtlsEndpointAliases.isEmpty)
    }

    @Test func aliasesAreHeldToTheEndpointRules() {
        #expect(
            error(
                #"{"issuer": "https://server.example.com", "mtls_endpoint_aliases": {"token_endpoint": "http://mtls.example.com/token"}}"#)?
                .code == .insecureEndpoint)
        #expect(
            error(#"{"issuer": "https://server.example.com", "mtls_endpoint_aliases": {"token_endpoint": 7}}"#)?.code
                == .invalidTokenResponse)
        #expect(error(#"{"issuer": "https://server.example.com", "mtls_endpoint_aliases": []}"#)?.code == .invalidTokenResponse)
    }

    @Test func aConfigurationWithACertificateUsesTheAliases() throws {
        let metadata = try parse(Self.withAliases)
        let configuration = try OAuth2Configuration(
            metadata: metadata, clientID: "client-1", clientCertificate: try ClientCertificateFixtures.first)
        #expect(configuration.tokenEndpoint.absoluteString == "https://mtls.example.com/token")
        #expect(configuration.revocationEndpoint?.absoluteString == "https://mtls.example.com/revo")
        #expect(configuration.deviceAuthorizationEndpoint?.absoluteString == "https://mtls.example.com/device")
        #expect(configuration.openID?.userinfoEndpoint?.absoluteString == "https://mtls.example.com/userinfo")
        #expect(configuration.pushedAuthorizationRequestEndpoint?.absoluteString == "https://mtls.example.com/par")
        // The browser's endpoint is never an alias: the user agent presents no client certificate.
        #expect(configuration.authorizationEndpoint?.absoluteString == "https://server.example.com/authorize")
        #expect(configuration.clientAuthentication == .tlsClientAuth)
        #expect(configuration.clientCertificate?.thumbprint == ClientCertificateFixtures.firstThumbprint)
    }

    @Test func aConfigurationWithoutACertificateIgnoresTheAliases() throws {
        let configuration = try OAuth2Configuration(metadata: try parse(Self.withAliases), clientID: "client-1")
        #expect(configuration.tokenEndpoint.absoluteString == "https://server.example.com/token")
        #expect(configuration.revocationEndpoint?.absoluteString == "https://server.example.com/revo")
        #expect(configuration.openID?.userinfoEndpoint?.absoluteString == "https://server.example.com/userinfo")
        #expect(configuration.pushedAuthorizationRequestEndpoint?.absoluteString == "https://server.example.com/par")
        #expect(configuration.clientAuthentication == ClientAuthentication.none)
    }

    @Test func aSelfSignedOnlyProviderGetsThatMethod() throws {
        let metadata = try parse(
            #"{"issuer": "https://server.example.com", "token_endpoint": "https://server.example.com/token", "token_endpoint_auth_methods_supported": ["self_signed_tls_client_auth"]}"#
        )
        let configuration = try OAuth2Configuration(
            metadata: metadata, clientID: "client-1", clientCertificate: try ClientCertificateFixtures.first)
        #expect(configuration.clientAuthentication == .selfSignedTLSClientAuth)
        #expect(configuration.tokenEndpoint.absoluteString == "https://server.example.com/token")
    }
}
