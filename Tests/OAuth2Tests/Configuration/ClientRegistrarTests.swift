import Foundation
import OAuth2Testing
import Testing
@testable import OAuth2

@Suite struct ClientRegistrarTests {
    static let issuer = "https://id.example"
    static let endpoint = URL(string: "https://id.example/register/")!
    static let clientURI = URL(string: "https://id.example/register/abc123/")!
    static let secret = "s3cr3t-client-secret-value-0123456789"
    static let accessToken = "registration-access-token-0123456789"
    static let client = ClientMetadata(redirectURIs: [URL(string: "http://127.0.0.1:8080/callback")!], clientName: "Test App")

    static func registrar(
        _ transport: CannedTransport, endpoint: URL? = endpoint, rules: DiscoveryRules = DiscoveryRules()
    ) -> ClientRegistrar {
        ClientRegistrar(
            metadata: AuthorizationServerMetadata(issuer: issuer, registrationEndpoint: endpoint), transport: transport, rules: rules)
    }

    static func answer(_ fields: String = "", clientID: String = #""client_id":"abc123""#) -> String {
        let extra = fields.isEmpty ? "" : "," + fields
        return "{\(clientID)\(extra)}"
    }

    static let registration = ClientRegistration(
        issuer: issuer, clientID: "abc123", clientSecret: .opaque(secret), registrationAccessToken: Secret(accessToken),
        registrationClientURI: clientURI, metadata: client)

    static func jsonObject(_ body: Data?) throws -> [String: Any] {
        let body = try #require(body)
        let object = try JSONSerialization.jsonObject(with: body)
        return try #require(object as? [String: Any])
    }

    private func registrationError(_ transport: CannedTransport, rules: DiscoveryRules = DiscoveryRules()) async -> OAuth2Error? {
        do {
            _ = try await Self.registrar(transport, rules: rules).register(Self.client)
            Issue.record("expected an OAuth2Error")
            return nil
        } catch {
            return error
        }
    }

    // MARK: register (RFC 7591)

    @Test func registerPostsTheMetadataAsJSONWithTheInitialAccessToken() async throws {
        let transport = CannedTransport()
        transport.enqueue(json: Self.answer(), status: 201)
        _ = try await Self.registrar(transport).register(Self.client, initialAccessToken: Secret("initial-token"))
        let request = try #require(transport.requests.first)
        #expect(request.method == .post)
        #expect(request.url == Self.endpoint)
        #expect(request.headers[.contentType] == "application/json")
        #expect(request.headers[.authorization] == "Bearer initial-token")
        #expect(request.redirects == .never)
        #expect(request.maxResponseSize == DiscoveryRules().maxDocumentSize)
        let object = try Self.jsonObject(request.body)
        #expect(object["redirect_uris"] as? [String] == ["http://127.0.0.1:8080/callback"])
        #expect(object["client_name"] as? String == "Test App")
        #expect(object["token_endpoint_auth_method"] as? String == "none")
        #expect(object["grant_types"] as? [String] == ["authorization_code", "refresh_token"])
        // nil fields are left out, and a new registration names no client.
        for absent in ["scope", "client_uri", "logo_uri", "software_id", "dpop_bound_access_tokens", "client_id"] {
            #expect(object[absent] == nil, "\(absent) was sent")
        }
    }

    @Test func registerWithoutAnInitialAccessTokenSendsNoAuthorization() async throws {
        let transport = CannedTransport()
        transport.enqueue(json: Self.answer(), status: 201)
        _ = try await Self.registrar(transport).register(Self.client)
        #expect(transport.requests.first?.headers[.authorization] == nil)
    }

    @Test func registerReadsEveryFieldOfTheRFC7591Answer() async throws {
        let transport = CannedTransport()
        transport.enqueue(
            json: Self.answer(
                """
                "client_secret":"\(Self.secret)","client_secret_expires_at":1900000000,"client_id_issued_at":1700000000,
                "registration_access_token":"\(Self.accessToken)","registration_client_uri":"\(Self.clientURI.absoluteString)",
                "client_name":"Renamed by the server","grant_types":["authorization_code"],"scope":"read",
                "dpop_bound_access_tokens":true,"unknown_field":{"x":1}
                """), status: 201)
        let registration = try await Self.registrar(transport).register(Self.client)
        #expect(registration.issuer == Self.issuer)
        #expect(registration.clientID == "abc123")
        #expect(registration.clientSecret?.value == Self.secret)
        #expect(registration.clientSecretExpiresAt == Date(timeIntervalSince1970: 1_900_000_000))
        #expect(registration.clientIDIssuedAt == Date(timeIntervalSince1970: 1_700_000_000))
        #expect(registration.registrationAccessToken?.value == Self.accessToken)
        #expect(registration.registrationClientURI == Self.clientURI)
        // What the server echoed wins; what it left out is what was sent.
        #expect(registration.metadata.clientName == "Renamed by the server")
        #expect(registration.metadata.grantTypes == ["authorization_code"])
        #expect(registration.metadata.scope == "read")
        #expect(registration.metadata.dpopBoundAccessTokens == true)
        #expect(registration.metadata.responseTypes == ["code"])
        #expect(registration.metadata.redirectURIs == Self.client.redirectURIs)
    }

    @Test func aSecretThatExpiresAtZeroNeverExpires() async throws {
        let transport = CannedTransport()
        transport.enqueue(json: Self.answer(#""client_secret":"x-secret","client_secret_expires_at":0"#), status: 201)
        let registration = try await Self.registrar(transport).register(Self.client)
        #expect(registration.clientSecret?.value == "x-secret")
        #expect(registration.clientSecretExpiresAt == nil)
    }

    @Test func registerAcceptsA200() async throws {
        let transport = CannedTransport()
        transport.enqueue(json: Self.answer(), status: 200)
        #expect(try await Self.registrar(transport).register(Self.client).clientID == "abc123")
    }

    @Test func registerRefusesASuccessOtherThan201Or200() async {
        let transport = CannedTransport()
        transport.enqueue(json: Self.answer(), status: 202)
        let error = await registrationError(transport)
        #expect(error?.code == .invalidRegistrationResponse)
        #expect(error?.httpStatus == 202)
    }

    @Test func registerRefusesAnAnswerWithoutAUsableClientID() async {
        for clientID in [
            #""other":1"#, #""client_id":null"#, #""client_id":42"#, #""client_id":"""#, #""client_id":["abc"]"#, #""client_id":"a\nb""#,
        ] {
            let transport = CannedTransport()
            transport.enqueue(json: Self.answer(#""client_secret":"\#(Self.secret)""#, clientID: clientID), status: 201)
            let error = await registrationError(transport)
            #expect(error?.code == .invalidRegistrationResponse, "\(clientID)")
            #expect(error.map { !String(describing: $0).contains(Self.secret) } ?? true)
        }
    }

    @Test func registerRefusesAnAnswerThatIsNotAJSONObject() async {
        for (body, contentType) in [
            ("[1,2]", "application/json"), ("not json", "application/json"), ("client_id=abc", "application/x-www-form-urlencoded"),
            ("<html></html>", "text/html"),
        ] {
            let transport = CannedTransport()
            transport.enqueue(HTTPTransportResponse(status: 201, headers: [.contentType: contentType], body: Data(body.utf8)))
            let error = await registrationError(transport)
            #expect(error?.code == .invalidRegistrationResponse, "\(body)")
        }
    }

    @Test func registerRefusesFieldsOfTheWrongType() async {
        for field in [
            #""client_secret":12"#, #""client_secret":"""#, #""client_secret_expires_at":"never""#,
            #""client_secret":"x","client_secret_expires_at":-1"#,
            #""client_id_issued_at":true"#, #""registration_access_token":7"#, #""registration_access_token":"a b""#,
            #""registration_client_uri":3"#, #""redirect_uris":"http://127.0.0.1/cb""#, #""redirect_uris":[1]"#,
            #""redirect_uris":["no scheme"]"#,
            #""grant_types":[1]"#, #""client_name":{}"#, #""dpop_bound_access_tokens":"yes""#, #""contacts":"a@example.com""#,
            #""logo_uri":"not a url""#,
        ] {
            let transport = CannedTransport()
            transport.enqueue(json: Self.answer(field), status: 201)
            let error = await registrationError(transport)
            #expect(error?.code == .invalidRegistrationResponse, "\(field)")
        }
    }

    @Test func registerRefusesAManagementURIOnAnotherOriginOrOverHTTP() async {
        for uri in [
            "https://evil.example/register/abc123/", "https://id.example:8443/register/abc123/", "http://id.example/register/abc123/",
            "https://user@id.example/register/abc123/",
        ] {
            let transport = CannedTransport()
            transport.enqueue(json: Self.answer(#""registration_access_token":"t","registration_client_uri":"\#(uri)""#), status: 201)
            let error = await registrationError(transport)
            #expect(error?.code == .invalidRegistrationResponse, "\(uri)")
        }
    }

    @Test func registerKeepsTheServersRFC7591Error() async {
        let transport = CannedTransport()
        transport.enqueue(
            json: #"{"error":"invalid_redirect_uri","error_description":"The redirection URI http://x is not allowed"}"#, status: 400)
        let error = await registrationError(transport)
        #expect(error?.code == "invalid_redirect_uri")
        #expect(error?.httpStatus == 400)
        #expect(error?.errorDescription == "The redirection URI http://x is not allowed")
    }

    @Test func registerRefusesAnOversizedAnswer() async {
        let transport = CannedTransport()
        let padding = String(repeating: "x", count: 2048)
        transport.enqueue(json: Self.answer(#""client_name":"\#(padding)""#), status: 201)
        let error = await registrationError(transport, rules: DiscoveryRules(maxDocumentSize: 1024))
        #expect(error?.code == .responseTooLarge)
        #expect(transport.requests.first?.maxResponseSize == 1024)
    }

    @Test func registerDoesNotFollowARedirect() async {
        let transport = CannedTransport()
        transport.enqueue(HTTPTransportResponse(status: 307, headers: [.location: "https://evil.example/register/"]))
        let error = await registrationError(transport)
        #expect(error?.code == .unexpectedRedirect)
        #expect(transport.requests.count == 1)
        #expect(transport.requests.first?.redirects == .never)
    }

    @Test func registerNeedsASecureRegistrationEndpoint() async {
        let transport = CannedTransport()
        let missing = await #expect(throws: OAuth2Error.self) {
            _ = try await Self.registrar(transport, endpoint: nil).register(Self.client)
        }
        #expect(missing?.code == .invalidConfiguration)
        let insecure = await #expect(throws: OAuth2Error.self) {
            _ = try await Self.registrar(transport, endpoint: URL(string: "http://id.example/register/")!)
                .register(Self.client, initialAccessToken: Secret("initial-token"))
        }
        #expect(insecure?.code == .insecureEndpoint)
        #expect(transport.requests.isEmpty)
    }

    // MARK: secrets

    @Test func noSecretInTheRegistrationsDescriptions() async throws {
        let transport = CannedTransport()
        transport.enqueue(
            json: Self.answer(#""client_secret":"\#(Self.secret)","registration_access_token":"\#(Self.accessToken)""#), status: 201)
        let registration = try await Self.registrar(transport).register(Self.client)
        var dumped = ""
        dump(registration, to: &dumped)
        for text in [String(describing: registration), String(reflecting: registration), dumped, "\(registration)"] {
            #expect(!text.contains(Self.secret))
            #expect(!text.contains(Self.accessToken))
            #expect(!text.contains("s3c"), "a client secret shows no prefix")
        }
    }

    @Test func noSecretInTheErrorsOfAnAnswerThatHoldsOne() async {
        let transport = CannedTransport()
        transport.enqueue(
            json: #"{"client_id":7,"client_secret":"\#(Self.secret)","registration_access_token":"\#(Self.accessToken)"}"#, status: 201)
        let error = await registrationError(transport)
        let text = error.map { "\($0) \(String(reflecting: $0))" } ?? ""
        #expect(!text.contains(Self.secret))
        #expect(!text.contains(Self.accessToken))
    }

    // MARK: RFC 7592

    @Test func readGetsTheRegistrationWithItsAccessTokenAndKeepsWhatTheAnswerLeavesOut() async throws {
        let transport = CannedTransport()
        transport.enqueue(json: Self.answer(#""client_name":"Now""#))
        let read = try await Self.registrar(transport).read(Self.registration)
        let request = try #require(transport.requests.first)
        #expect(request.method == .get)
        #expect(request.url == Self.clientURI)
        #expect(request.headers[.authorization] == "Bearer \(Self.accessToken)")
        #expect(request.redirects == .never)
        #expect(read.clientSecret?.value == Self.secret)
        #expect(read.registrationAccessToken?.value == Self.accessToken)
        #expect(read.registrationClientURI == Self.clientURI)
        #expect(read.metadata.clientName == "Now")
    }

    @Test func readTakesARotatedSecretAndAccessToken() async throws {
        let transport = CannedTransport()
        transport.enqueue(
            json: Self.answer(#""client_secret":"new-secret","client_secret_expires_at":0,"registration_access_token":"new-token""#))
        let read = try await Self.registrar(transport).read(Self.registration)
        #expect(read.clientSecret?.value == "new-secret")
        #expect(read.registrationAccessToken?.value == "new-token")
    }

    @Test func aServerThatForgotTheClientAnswersInvalidClient() async {
        for status: HTTPResponse.Status in [401, 404] {
            let transport = CannedTransport()
            transport.enqueue(json: #"{"error":"invalid_token","error_description":"Invalid registration access token"}"#, status: status)
            let error = await #expect(throws: OAuth2Error.self) {
                _ = try await Self.registrar(transport).read(Self.registration)
            }
            #expect(error?.code == .invalidClient)
            #expect(error?.httpStatus == status.code)
        }
    }

    @Test func readRefusesAnAnswerAboutAnotherClient() async {
        let transport = CannedTransport()
        transport.enqueue(json: Self.answer(clientID: #""client_id":"someone-else""#))
        let error = await #expect(throws: OAuth2Error.self) {
            _ = try await Self.registrar(transport).read(Self.registration)
        }
        #expect(error?.code == .invalidRegistrationResponse)
    }

    @Test func managementRefusesARegistrationOfAnotherServerOrWithoutRFC7592() async {
        let transport = CannedTransport()
        var other = Self.registration
        other.issuer = "https://other.example"
        var unmanaged = Self.registration
        unmanaged.registrationAccessToken = nil
        for registration in [other, unmanaged] {
            let error = await #expect(throws: OAuth2Error.self) {
                _ = try await Self.registrar(transport).read(registration)
            }
            #expect(error?.code == .invalidConfiguration)
        }
        #expect(transport.requests.isEmpty)
    }

    @Test func updatePutsTheMetadataWithTheClientIDAndKeepsTheRotatedAccessToken() async throws {
        let transport = CannedTransport()
        transport.enqueue(json: Self.answer(#""registration_access_token":"rotated-token","client_name":"Renamed""#))
        var changed = Self.client
        changed.clientName = "Renamed"
        let updated = try await Self.registrar(transport).update(Self.registration, to: changed)
        let request = try #require(transport.requests.first)
        #expect(request.method == .put)
        #expect(request.url == Self.clientURI)
        #expect(request.headers[.authorization] == "Bearer \(Self.accessToken)")
        let object = try Self.jsonObject(request.body)
        #expect(object["client_id"] as? String == "abc123")
        #expect(object["client_secret"] as? String == Self.secret)
        #expect(object["client_name"] as? String == "Renamed")
        #expect(updated.registrationAccessToken?.value == "rotated-token")
        #expect(updated.clientSecret?.value == Self.secret)
        #expect(updated.metadata.clientName == "Renamed")
    }

    @Test func deleteSendsADeleteAndTakesA204() async throws {
        let transport = CannedTransport()
        transport.enqueue(HTTPTransportResponse(status: 204))
        try await Self.registrar(transport).delete(Self.registration)
        let request = try #require(transport.requests.first)
        #expect(request.method == .delete)
        #expect(request.url == Self.clientURI)
        #expect(request.headers[.authorization] == "Bearer \(Self.accessToken)")
    }

    @Test func deleteOfAForgottenClientIsInvalidClient() async {
        let transport = CannedTransport()
        transport.enqueue(json: #"{"error":"invalid_token"}"#, status: 401)
        let error = await #expect(throws: OAuth2Error.self) {
            try await Self.registrar(transport).delete(Self.registration)
        }
        #expect(error?.code == .invalidClient)
    }
}
