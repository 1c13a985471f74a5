import Foundation
import OAuth2
import Testing

/// Pushed authorization requests (RFC 9126) and signed request objects
/// (RFC 9101) against glewlwyd, an implementation that is not ours: the
/// library's flow and `oauth2 authorize --par`, with its scripted browser.
/// Serialized: glewlwyd 2.7.5 on SQLite answers server_error to concurrent
/// code grants ("Error executing sql query" in its log).
@Suite(.serialized, .enabled(if: Glewlwyd.isConfigured, "needs glewlwyd: `make test` starts it and sets OAUTH2_IT_GLEWLWYD"))
struct PushedAuthorizationTests {
    static let redirectURI = URL(string: "http://127.0.0.1/callback")!
    /// One transport for the suite, as an app has.
    static let transport = CurlTransport()

    /// A provider made from `plugin`'s discovered metadata, for one of glewlwyd's clients.
    private func provider(
        _ glewlwyd: Glewlwyd, plugin: String = "oidc", client name: String, transport: CurlTransport,
        configure: (inout OAuth2Configuration) throws -> Void = { _ in }
    ) async throws -> OAuth2Provider {
        let client = try glewlwyd.client(name)
        var configuration = try await OAuth2Configuration.discover(
            issuer: try glewlwyd.issuer(plugin), clientID: client.id, clientSecret: client.secret.map(Secret.init), transport: transport)
        configuration.defaultScopes = ["openid", "api"]
        if let keyPath = client.privateKey {
            configuration.clientAuthentication = .privateKeyJWT
            configuration.clientAssertionKey = try JWTSigningKey.ecdsa(
                pem: String(contentsOfFile: keyPath, encoding: .utf8), keyID: client.keyID)
        }
        try configure(&configuration)
        return try OAuth2Provider(configuration: configuration, transport: transport)
    }

    /// Signs alice in at the pending authorization's URL and exchanges the code.
    private func signIn(_ glewlwyd: Glewlwyd, _ provider: OAuth2Provider, _ pending: PendingAuthorization) async throws -> AccessToken {
        let browsed = try await glewlwyd.browse(pending.url.absoluteString)
        #expect(browsed.status == 0, "\(browsed.stderr)")
        let redirect = browsed.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        return try await provider.token(for: .authorizationCode(redirect: redirect, pending: pending))
    }

    static func query(_ url: URL) -> [String] {
        (URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems ?? []).map(\.name)
    }

    @Test func aCodeFlowThroughAPushedRequestSignsAliceIn() async throws {
        let glewlwyd = try Glewlwyd.load()
        let transport = Self.transport
        let provider = try await provider(glewlwyd, client: "confidential", transport: transport) { $0.pushedAuthorization = .always }
        let pending = try await provider.authorizationURL(redirectURI: Self.redirectURI)
        #expect(Self.query(pending.url) == ["client_id", "request_uri"])
        let expiresAt = try #require(pending.pushedRequestExpiresAt)
        #expect(expiresAt > Date() && expiresAt < Date().addingTimeInterval(100))
        let token = try await signIn(glewlwyd, provider, pending)
        #expect(token.idToken != nil)
        #expect(!token.accessToken.value.isEmpty)
    }

    @Test func aPublicClientPushesWithoutAuthentication() async throws {
        let glewlwyd = try Glewlwyd.load()
        let transport = Self.transport
        let provider = try await provider(glewlwyd, client: "public", transport: transport) { $0.pushedAuthorization = .always }
        let pending = try await provider.authorizationURL(redirectURI: Self.redirectURI)
        #expect(Self.query(pending.url) == ["client_id", "request_uri"])
        _ = try await signIn(glewlwyd, provider, pending)
    }

    @Test func aPrivateKeyJWTClientPushesASignedRequestObject() async throws {
        let glewlwyd = try Glewlwyd.load()
        let transport = Self.transport
        let provider = try await provider(glewlwyd, client: "jwt", transport: transport) {
            $0.pushedAuthorization = .always
            $0.signsRequestObject = true
        }
        let pending = try await provider.authorizationURL(redirectURI: Self.redirectURI)
        #expect(Self.query(pending.url) == ["client_id", "request_uri"])
        let token = try await signIn(glewlwyd, provider, pending)
        #expect(token.idToken != nil)
    }

    @Test func aSignedRequestObjectByValueSignsAliceIn() async throws {
        let glewlwyd = try Glewlwyd.load()
        let transport = Self.transport
        let provider = try await provider(glewlwyd, client: "jwt", transport: transport) {
            $0.pushedAuthorization = .never
            $0.signsRequestObject = true
        }
        let pending = try await provider.authorizationURL(redirectURI: Self.redirectURI)
        #expect(Self.query(pending.url).contains("request"))
        #expect(!Self.query(pending.url).contains("code_challenge"))
        let token = try await signIn(glewlwyd, provider, pending)
        #expect(token.idToken != nil)
    }

    /// jwcrypto (PyPI, in glewlwyd's virtual environment) verifies our request
    /// object with the public JWK glewlwyd has registered, and reads its header and claims.
    @Test func jwcryptoVerifiesOurRequestObjectWithTheRegisteredKey() async throws {
        let glewlwyd = try Glewlwyd.load()
        let client = try glewlwyd.client("jwt")
        var configuration = try OAuth2Configuration(
            clientID: client.id, authorizationEndpoint: URL(string: "https://idp.example/authorize"),
            tokenEndpoint: URL(string: "https://idp.example/token")!, issuer: "https://idp.example",
            clientAssertionKey: JWTSigningKey.ecdsa(
                pem: String(contentsOfFile: try #require(client.privateKey), encoding: .utf8), keyID: client.keyID))
        configuration.signsRequestObject = true
        let provider = try OAuth2Provider(configuration: configuration, transport: Self.transport)
        let pending = try await provider.authorizationURL(redirectURI: Self.redirectURI, scopes: ["openid", "api"])
        let request = try #require(
            URLComponents(url: pending.url, resolvingAgainstBaseURL: false)?.queryItems?.first { $0.name == "request" }?.value)

        let script = #"""
            import json, sys
            from jwcrypto import jwk, jws
            case = json.load(sys.stdin)
            token = jws.JWS()
            token.deserialize(case["request"])
            token.verify(jwk.JWK(**case["jwk"]), alg="ES256")
            print(json.dumps({"header": token.jose_header, "claims": json.loads(token.payload)}))
            """#
        let input = String(
            decoding: try JSONSerialization.data(withJSONObject: ["request": request, "jwk": try glewlwyd.publicJWK("jwt")]), as: UTF8.self)
        let result = try await Subprocess.run(
            try glewlwyd.python(), ["-c", script], environment: ProcessInfo.processInfo.environment, input: input)
        #expect(result.status == 0, "\(result.stderr)")
        let answer = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        let header = try #require(answer["header"] as? [String: Any])
        let claims = try #require(answer["claims"] as? [String: Any])
        #expect(header["typ"] as? String == "oauth-authz-req+jwt")
        #expect(header["kid"] as? String == client.keyID)
        #expect(claims["iss"] as? String == client.id)
        #expect(claims["client_id"] as? String == client.id)
        #expect(claims["aud"] as? String == "https://idp.example")
        #expect(claims["state"] as? String == pending.state)
        #expect(claims["scope"] as? String == "openid api")
        let issuedAt = try #require(claims["iat"] as? Int)
        #expect(claims["nbf"] as? Int == issuedAt)
        #expect(try #require(claims["exp"] as? Int) > issuedAt)
        #expect((claims["jti"] as? String)?.isEmpty == false)
    }

    @Test func aRequestObjectSignedByAnotherKeyIsRefused() async throws {
        let glewlwyd = try Glewlwyd.load()
        let transport = Self.transport
        // glewlwyd verifies the signature: the same request, signed by a key it does not know, gets no code.
        let provider = try await provider(glewlwyd, client: "jwt", transport: transport) {
            $0.pushedAuthorization = .never
            $0.signsRequestObject = true
            $0.clientAssertionKey = try JWTSigningKey.ecdsa(
                pem: String(contentsOfFile: try glewlwyd.otherKeyPEM(), encoding: .utf8), keyID: try glewlwyd.client("jwt").keyID)
        }
        let pending = try await provider.authorizationURL(redirectURI: Self.redirectURI)
        let browsed = try await glewlwyd.browse(pending.url.absoluteString)
        #expect(browsed.status != 0 || !browsed.stdout.contains("code="), "\(browsed.stdout)")
    }

    @Test func aDPoPGrantThroughAPushedRequestGetsATokenBoundToItsKey() async throws {
        let glewlwyd = try Glewlwyd.load()
        let transport = Self.transport
        let provider = try await provider(glewlwyd, client: "confidential", transport: transport) {
            $0.pushedAuthorization = .always
            $0.dpop = DPoPSettings()
        }
        let pending = try await provider.authorizationURL(redirectURI: Self.redirectURI)
        let key = try #require(pending.dpopKey)
        #expect(Self.query(pending.url) == ["client_id", "request_uri"])
        let token = try await signIn(glewlwyd, provider, pending)
        #expect(token.tokenType.lowercased() == "dpop")
        #expect(token.dpopKey?.thumbprint == key.thumbprint)
        // glewlwyd's own word on the binding: the access token's cnf.jkt is the key's thumbprint.
        let parts = token.accessToken.value.split(separator: ".")
        let payload = try #require(parts.count == 3 ? Data(base64URL: String(parts[1])) : nil)
        let claims = try #require(try JSONSerialization.jsonObject(with: payload) as? [String: Any])
        #expect((claims["cnf"] as? [String: Any])?["jkt"] as? String == key.thumbprint)
    }

    @Test func theFAPI2SwitchSignsAliceInWithPARDPoPAndAKeyAssertion() async throws {
        let glewlwyd = try Glewlwyd.load()
        let provider = try await provider(glewlwyd, client: "jwt", transport: Self.transport) { $0.securityProfile = .fapi2 }
        #expect(provider.configuration.pushedAuthorization == .always)
        #expect(provider.configuration.requiresIssuerInRedirect)
        let pending = try await provider.authorizationURL(redirectURI: Self.redirectURI)
        #expect(Self.query(pending.url) == ["client_id", "request_uri"])
        let key = try #require(pending.dpopKey)
        #expect(key.algorithm == .es256)
        let token = try await signIn(glewlwyd, provider, pending)
        #expect(token.tokenType.lowercased() == "dpop")
        #expect(token.dpopKey?.thumbprint == key.thumbprint)
        #expect(token.idToken != nil)
    }

    @Test func aProviderThatRequiresPushedRequestsRefusesADirectOneAndGetsAPushAutomatically() async throws {
        let glewlwyd = try Glewlwyd.load()
        let transport = Self.transport
        // Configured by hand, without the metadata's require_pushed_authorization_requests: the browser is refused.
        let endpoints = try glewlwyd.plugin("oidcpar")
        let manual = try OAuth2Provider(
            configuration: OAuth2Configuration(
                clientID: "public", authorizationEndpoint: URL(string: try #require(endpoints["authorize"])),
                tokenEndpoint: URL(string: try #require(endpoints["token"]))!, defaultScopes: ["openid", "api"]),
            transport: transport)
        let direct = try await manual.authorizationURL(redirectURI: Self.redirectURI)
        #expect(Self.query(direct.url).contains("code_challenge"))
        let refused = try await glewlwyd.browse(direct.url.absoluteString)
        #expect(refused.status != 0 || !refused.stdout.contains("code="), "\(refused.stdout)")

        // Discovered: the metadata requires pushing, and the default (automatic) pushes.
        let discovered = try await provider(glewlwyd, plugin: "oidcpar", client: "public", transport: transport)
        #expect(discovered.configuration.requiresPushedAuthorizationRequests)
        #expect(discovered.configuration.pushedAuthorization == .automatic)
        let pending = try await discovered.authorizationURL(redirectURI: Self.redirectURI)
        #expect(Self.query(pending.url) == ["client_id", "request_uri"])
        _ = try await signIn(glewlwyd, discovered, pending)
    }

    @Test func theCLIPushesWithThePARFlagAndStoresTheToken() async throws {
        let glewlwyd = try Glewlwyd.load()
        let cli = try CLI()
        let client = try glewlwyd.client("confidential")
        let secretFile = try cli.writeFile("secret", (client.secret ?? "") + "\n")
        let options = [
            "--par", "--issuer", try glewlwyd.issuer("oidc"), "--client-id", client.id, "--client-secret-file", secretFile,
            "--scope", "openid api", "--redirect-uri", Self.redirectURI.absoluteString, "--store", cli.store,
        ]
        let result = try await authorize(glewlwyd, cli, options)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.url.contains("request_uri="))
        #expect(!result.url.contains("code_challenge"))
        #expect(try await cli.storedToken() != nil)
    }

    @Test func theCLIPushesWithoutTheFlagWhereTheProviderRequiresIt() async throws {
        let glewlwyd = try Glewlwyd.load()
        let cli = try CLI()
        let options = [
            "--issuer", try glewlwyd.issuer("oidcpar"), "--client-id", "public", "--scope", "openid api",
            "--redirect-uri", Self.redirectURI.absoluteString, "--store", cli.store,
        ]
        let result = try await authorize(glewlwyd, cli, options)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.url.contains("request_uri="))
        #expect(try await cli.storedToken() != nil)
    }

    @Test func theCLISendsASignedRequestObject() async throws {
        let glewlwyd = try Glewlwyd.load()
        let cli = try CLI()
        let client = try glewlwyd.client("jwt")
        let options = [
            "--request-object", "--issuer", try glewlwyd.issuer("oidc"), "--client-id", client.id,
            "--client-key-file", try #require(client.privateKey), "--client-key-id", try #require(client.keyID),
            "--scope", "openid api", "--redirect-uri", Self.redirectURI.absoluteString, "--store", cli.store,
        ]
        let result = try await authorize(glewlwyd, cli, options)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.url.contains("request="))
        #expect(!result.url.contains("code_challenge"))
        #expect(try await cli.storedToken() != nil)
    }

    @Test func theCLIFollowsFAPI2AndStoresADPoPBoundToken() async throws {
        let glewlwyd = try Glewlwyd.load()
        let cli = try CLI()
        let client = try glewlwyd.client("jwt")
        let options = [
            "--fapi2", "--issuer", try glewlwyd.issuer("oidc"), "--client-id", client.id,
            "--client-key-file", try #require(client.privateKey), "--client-key-id", try #require(client.keyID),
            "--scope", "openid api", "--redirect-uri", Self.redirectURI.absoluteString, "--store", cli.store,
        ]
        let result = try await authorize(glewlwyd, cli, options)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.url.contains("request_uri="))
        let token = try #require(try await cli.storedToken())
        #expect(token.tokenType.lowercased() == "dpop")
        #expect(token.dpopKey != nil)
    }

    @Test func theCLIRefusesFAPI2ForASecretBasedClientNamingTheRule() async throws {
        let glewlwyd = try Glewlwyd.load()
        let cli = try CLI()
        let client = try glewlwyd.client("confidential")
        let secretFile = try cli.writeFile("secret", (client.secret ?? "") + "\n")
        let result = try await cli.run(
            [
                "authorize", "--fapi2", "--issuer", try glewlwyd.issuer("oidc"), "--client-id", client.id, "--client-secret-file",
                secretFile, "--store", cli.store,
            ], input: "")
        #expect(result.status == 1)
        #expect(
            result.errorLines.first?.hasPrefix(
                "error: invalid_configuration: FAPI 2.0 Security Profile: clients shall authenticate with private_key_jwt or mutual TLS")
                == true,
            "\(result.stderr)")
        #expect(result.stdout.isEmpty)
    }

    /// `oauth2 authorize` as a person runs it against glewlwyd: the URL, the browser, the pasted redirect.
    private func authorize(_ glewlwyd: Glewlwyd, _ cli: CLI, _ options: [String]) async throws -> (
        status: Int32, stderr: String, url: String
    ) {
        let command = try cli.start(["authorize"] + options)
        let url = try await command.firstLineOfStdout()
        let browsed = try await glewlwyd.browse(url)
        command.write(browsed.stdout.trimmingCharacters(in: .whitespacesAndNewlines) + "\n")
        command.closeInput()
        let result = try await command.wait()
        return (result.status, result.stderr + browsed.stderr, url)
    }
}

/// glewlwyd's run, as `scripts/glewlwyd.sh` describes it in its env.json.
private struct Glewlwyd: Sendable {
    struct Client: Sendable {
        let id: String
        let secret: String?
        let privateKey: String?
        let keyID: String?
    }

    let environment: [String: JSONValue]

    static let isConfigured = !(ProcessInfo.processInfo.environment["OAUTH2_IT_GLEWLWYD"] ?? "").isEmpty

    static func load() throws -> Glewlwyd {
        guard let path = ProcessInfo.processInfo.environment["OAUTH2_IT_GLEWLWYD"], !path.isEmpty else {
            throw ProviderError(description: "OAUTH2_IT_GLEWLWYD is not set")
        }
        let object = try JSONDecoder().decode([String: JSONValue].self, from: Data(contentsOf: URL(fileURLWithPath: path)))
        return Glewlwyd(environment: object)
    }

    private func object(_ value: JSONValue?) throws -> [String: JSONValue] {
        guard case .object(let object)? = value else { throw ProviderError(description: "glewlwyd's env.json lacks an object") }
        return object
    }

    func plugin(_ name: String) throws -> [String: String] {
        try object(try object(environment["plugins"])[name]).compactMapValues(\.stringValue)
    }

    func issuer(_ plugin: String) throws -> String {
        guard let issuer = try self.plugin(plugin)["issuer"] else { throw ProviderError(description: "no issuer for \(plugin)") }
        return issuer
    }

    func client(_ name: String) throws -> Client {
        let client = try object(try object(environment["clients"])[name])
        guard let id = client["client_id"]?.stringValue else { throw ProviderError(description: "no client \(name)") }
        return Client(
            id: id, secret: client["client_secret"]?.stringValue, privateKey: client["private_key"]?.stringValue,
            keyID: client["kid"]?.stringValue)
    }

    /// The public JWK glewlwyd has registered for a client, as a JSON object.
    func publicJWK(_ name: String) throws -> [String: String] {
        let client = try object(try object(environment["clients"])[name])
        return try object(client["public_jwk"]).compactMapValues(\.stringValue)
    }

    /// The Python of glewlwyd's virtual environment (it has jwcrypto): the browser's interpreter.
    func python() throws -> String {
        guard case .array(let command)? = environment["browser"], let executable = command.first?.stringValue else {
            throw ProviderError(description: "glewlwyd's env.json has no browser")
        }
        return executable
    }

    /// A PEM file with an EC key glewlwyd does not know.
    func otherKeyPEM() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("glewlwyd-other-\(UUID().uuidString).pem").path
        try Data(JWTSigningKeyFixture.otherP256PEM.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// Runs glewlwyd's scripted browser: alice signs in at `url`; stdout is where glewlwyd sent the browser.
    func browse(_ url: String) async throws -> Subprocess.Result {
        guard case .array(let command)? = environment["browser"], let executable = command.first?.stringValue else {
            throw ProviderError(description: "glewlwyd's env.json has no browser")
        }
        let user = try object(environment["user"])
        let arguments =
            command.dropFirst().compactMap(\.stringValue) + [
                url, "--username", user["username"]?.stringValue ?? "alice", "--password", user["password"]?.stringValue ?? "",
            ]
        return try await Subprocess.run(executable, arguments, environment: ProcessInfo.processInfo.environment)
    }
}

/// A P-256 key glewlwyd does not know (the unit tests' `JOSEFixtures.sec1P256`).
private enum JWTSigningKeyFixture {
    static let otherP256PEM = """
        -----BEGIN EC PRIVATE KEY-----
        MHcCAQEEIMCCGEZBUMFgUR+YTjzmIGlFkuUqSSqULvYyE7t8mCPxoAoGCCqGSM49
        AwEHoUQDQgAE4Ey0jq7lQSpimk01WGB5zte+2cTjAC0QxSqM09OBgf+6XFCNGcCU
        uVrQISY3OEAcLwHeGP+rICRc74KL6BJGhQ==
        -----END EC PRIVATE KEY-----
        """
}

private extension Data {
    /// Decodes base64url without padding (RFC 7515 §2).
    init?(base64URL text: String) {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        self.init(base64Encoded: base64)
    }
}
