import Foundation
import OAuth2
import Testing

/// A glewlwyd run's env.json (the parts the tests read; Tests/Glewlwyd/README.md has all of it).
struct GlewlwydRun: Decodable, Sendable {
    struct Endpoints: Decodable, Sendable {
        let token: String
        let device: String
    }

    struct Client: Decodable, Sendable {
        let clientID: String
        let clientSecret: String?
        let privateKey: String?
        let kid: String?

        enum CodingKeys: String, CodingKey {
            case clientID = "client_id"
            case clientSecret = "client_secret"
            case privateKey = "private_key"
            case kid
        }
    }

    struct User: Decodable, Sendable {
        let username: String
        let password: String
    }

    struct Resource: Decodable, Sendable {
        let me: String
        let bearerMe: String

        enum CodingKeys: String, CodingKey {
            case me
            case bearerMe = "bearer_me"
        }
    }

    struct TLS: Decodable, Sendable {
        let ca: String
    }

    let issuer: String
    let endpoints: Endpoints
    let clients: [String: Client]
    let user: User
    let redirectURIs: [String]
    let resource: Resource
    let browser: [String]
    let tls: TLS?

    enum CodingKeys: String, CodingKey {
        case issuer, endpoints, clients, user, resource, browser, tls
        case redirectURIs = "redirect_uris"
    }

    static let isConfigured = !(ProcessInfo.processInfo.environment["OAUTH2_IT_GLEWLWYD"] ?? "").isEmpty
    static let tlsIsConfigured = !(ProcessInfo.processInfo.environment["OAUTH2_IT_GLEWLWYD_TLS"] ?? "").isEmpty

    /// The plain run (`OAUTH2_IT_GLEWLWYD`).
    static func plain() throws -> (run: GlewlwydRun, path: String) { try load("OAUTH2_IT_GLEWLWYD") }
    /// The run behind the TLS front (`OAUTH2_IT_GLEWLWYD_TLS`).
    static func behindTLS() throws -> (run: GlewlwydRun, path: String) { try load("OAUTH2_IT_GLEWLWYD_TLS") }

    private static func load(_ variable: String) throws -> (run: GlewlwydRun, path: String) {
        guard let path = ProcessInfo.processInfo.environment[variable], !path.isEmpty else {
            throw ProviderError(description: "\(variable) is not set")
        }
        do {
            return (try JSONDecoder().decode(GlewlwydRun.self, from: Data(contentsOf: URL(fileURLWithPath: path))), path)
        } catch {
            throw ProviderError(description: "\(variable)=\(path) cannot be read as glewlwyd's env.json: \(error)")
        }
    }

    func client(_ name: String) throws -> Client {
        guard let client = clients[name] else { throw ProviderError(description: "glewlwyd has no client \(name)") }
        return client
    }

    /// The common options for a client: discovery through the issuer, this test's store.
    func options(client name: String, for cli: CLI) throws -> [String] {
        let client = try client(name)
        var options = ["--issuer", issuer, "--client-id", client.clientID, "--store", cli.store]
        if let secret = client.clientSecret {
            options += ["--client-secret-file", try cli.writeFile("\(name)-secret", secret)]
        }
        if let tls { options += ["--ca-file", tls.ca] }
        return options
    }

    /// Runs the scripted browser (env.json's `browser` command) with `arguments` and the user's password.
    func browse(_ arguments: [String]) async throws -> String {
        guard let executable = browser.first else { throw ProviderError(description: "env.json has no browser command") }
        let result = try await Subprocess.run(
            executable, Array(browser.dropFirst()) + arguments + ["--username", user.username, "--password=\(user.password)"],
            environment: ProcessInfo.processInfo.environment)
        guard result.status == 0 else {
            throw ProviderError(description: "glewlwyd's browser.py failed (\(result.status)): \(result.stderr)")
        }
        return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

/// glewlwyd, a provider that is not ours (Tests/Glewlwyd/README.md): first its
/// own raw-HTTP self-test, so that a failure below is told apart from a broken
/// witness, then the CLI's existing grants against it, plain and through the
/// TLS front. The DPoP, PAR, JAR and mTLS tests build on the same run.
@Suite(.enabled(if: GlewlwydRun.isConfigured, "needs glewlwyd: `make test` starts it and sets OAUTH2_IT_GLEWLWYD"))
struct GlewlwydProviderTests {
    /// The witness itself: Tests/Glewlwyd/selftest.py, raw HTTP, no Swift.
    @Test func glewlwydsOwnSelfTestPasses() async throws {
        let (run, path) = try GlewlwydRun.plain()
        guard let python = run.browser.first, let browserScript = run.browser.dropFirst().first else {
            throw ProviderError(description: "env.json has no browser command")
        }
        let selftest = URL(fileURLWithPath: browserScript).deletingLastPathComponent().appendingPathComponent("selftest.py").path
        let result = try await Subprocess.run(
            python, [selftest, path], environment: ProcessInfo.processInfo.environment, timeout: .seconds(120))
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        #expect(result.stdout.contains(" passed, 0 failed"), "\(result.stdout)")
    }

    /// The shared contract's proofs (DPoPKey) against two implementations that
    /// are not ours: glewlwyd binds the token to the key (`cnf.jkt` is the key's
    /// RFC 7638 thumbprint), and the resource server (auth0-api-python for
    /// ES256, jwcrypto for the others) takes the proof with `ath`.
    @Test(arguments: DPoPKey.supportedAlgorithms)
    func dpopKeyProofsAreAcceptedByGlewlwydAndTheResourceServer(_ algorithm: JWSAlgorithm) async throws {
        let (run, _) = try GlewlwydRun.plain()
        let client = try run.client("confidential")
        let secret = try #require(client.clientSecret)
        let key = try DPoPKey.generate(algorithm: algorithm)
        let dpop = try #require(HTTPField.Name("DPoP"))

        var tokenRequest = HTTPTransportRequest(method: .post, url: try #require(URL(string: run.endpoints.token)))
        tokenRequest.headers.append(HTTPField(name: .contentType, value: "application/x-www-form-urlencoded"))
        let credentials = Data("\(client.clientID):\(secret)".utf8).base64EncodedString()
        tokenRequest.headers.append(HTTPField(name: .authorization, value: "Basic \(credentials)"))
        tokenRequest.headers.append(
            HTTPField(name: dpop, value: try key.proof(method: "POST", url: run.endpoints.token, now: Date()).value))
        tokenRequest.body = Data("grant_type=client_credentials&scope=api".utf8)
        let tokenResponse = try await Provider.send(tokenRequest)

        #expect(tokenResponse.status == 200, "\(String(decoding: tokenResponse.body, as: UTF8.self))")
        let body = try JSONObject(String(decoding: tokenResponse.body, as: UTF8.self))
        #expect(body.string("token_type") == "DPoP")
        let accessToken = try #require(body.string("access_token"))
        let payload = try #require(accessToken.split(separator: ".").dropFirst().first)
        let claims = try JSONObject(String(decoding: try #require(Self.base64URLDecoded(String(payload))), as: UTF8.self))
        #expect((claims["cnf"] as? [String: Any])?["jkt"] as? String == key.thumbprint)

        var call = HTTPTransportRequest(url: try #require(URL(string: run.resource.me)))
        call.headers.append(HTTPField(name: .authorization, value: "DPoP \(accessToken)"))
        call.headers.append(
            HTTPField(
                name: dpop,
                value: try key.proof(method: "GET", url: run.resource.me, accessToken: Secret(accessToken), now: Date()).value))
        let answer = try await Provider.send(call)

        #expect(answer.status == 200, "\(String(decoding: answer.body, as: UTF8.self))")
        let verifiedBy = try JSONObject(String(decoding: answer.body, as: UTF8.self)).string("verified_by")
        #expect(verifiedBy == (algorithm == .es256 ? "auth0-api-python" : "jwcrypto"))
    }

    static func base64URLDecoded(_ text: String) -> Data? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        return Data(base64Encoded: base64)
    }

    @Test func clientCredentialsThroughDiscoveryAndABearerCall() async throws {
        let (run, _) = try GlewlwydRun.plain()
        let cli = try CLI()
        let options = try run.options(client: "confidential", for: cli) + ["--scope", "api"]

        let grant = try await cli.run(["client-credentials"] + options)
        #expect(grant.status == 0, "\(grant.stderr)")
        let call = try await cli.run(["call", run.resource.bearerMe] + options)

        #expect(call.status == 0, "\(call.stderr)")
        #expect(try JSONObject(call.stdout).string("client_id") == "confidential")
    }

    @Test func privateKeyJWTClientCredentials() async throws {
        let (run, _) = try GlewlwydRun.plain()
        let client = try run.client("jwt")
        let key = try #require(client.privateKey)
        let kid = try #require(client.kid)
        let cli = try CLI()
        let options =
            try run.options(client: "jwt", for: cli) + [
                "--auth-method", "private_key_jwt", "--client-key-file", key, "--client-key-id", kid, "--scope", "api",
            ]

        let grant = try await cli.run(["client-credentials"] + options)

        #expect(grant.status == 0, "\(grant.stderr)")
    }

    /// glewlwyd compares redirect URIs exactly, so the CLI's pasted redirect
    /// (no listener, no port) is the one that fits; the ID token is verified and
    /// the refresh token works.
    @Test func authorizeWithPKCEThenRefresh() async throws {
        let (run, _) = try GlewlwydRun.plain()
        let cli = try CLI()
        let options =
            try run.options(client: "public", for: cli) + ["--scope", "openid api", "--redirect-uri", run.redirectURIs[0]]
        let command = try cli.start(["authorize"] + options)
        let url = try await command.firstLineOfStdout()
        let redirect = try await run.browse([url])
        command.write(redirect + "\n")
        command.closeInput()
        let signIn = try await command.wait()

        #expect(signIn.status == 0, "\(signIn.stderr)")
        #expect(signIn.stderr.contains("ID token verified"), "\(signIn.stderr)")
        #expect(redirect.contains("iss="), "glewlwyd sends iss (RFC 9207): \(redirect)")
        let refresh = try await cli.run(["refresh"] + options)
        #expect(refresh.status == 0, "\(refresh.stderr)")
    }

    @Test func deviceFlow() async throws {
        let (run, _) = try GlewlwydRun.plain()
        let cli = try CLI()
        let options = try run.options(client: "public", for: cli) + ["--scope", "openid api"]
        let command = try cli.start(["device"] + options)
        let address = try await command.stderrLine(startingWith: "Or open this address, which carries the code: ")

        _ = try await run.browse(["--device", address])
        let result = try await command.wait()

        #expect(result.status == 0, "\(result.stderr)")
    }

    @Test(.enabled(if: GlewlwydRun.tlsIsConfigured, "needs glewlwyd behind its TLS front: OAUTH2_IT_GLEWLWYD_TLS"))
    func clientCredentialsThroughTheTLSFrontWithItsCA() async throws {
        let (run, _) = try GlewlwydRun.behindTLS()
        let cli = try CLI()
        let options = try run.options(client: "confidential", for: cli) + ["--scope", "api"]

        let grant = try await cli.run(["client-credentials"] + options)
        let call = try await cli.run(["call", run.resource.bearerMe] + options)

        #expect(grant.status == 0, "\(grant.stderr)")
        #expect(call.status == 0, "\(call.stderr)")
    }
}
