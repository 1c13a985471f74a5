import Foundation
import OAuth2
import Testing

/// DPoP at a real token endpoint that is not ours: glewlwyd 2.7.5
/// (Tests/Glewlwyd/README.md). It binds what it issues to the proof's key
/// (`cnf.jkt`), demands nonces on its `oidcnonce` instance, binds a public
/// client's refresh token to the key, and binds a code to `dpop_jkt`.
// Serialized: glewlwyd keeps its state in SQLite, and a device authorization
// written while other requests write failed with an SQL error (server_error).
@Suite(
    .serialized,
    .enabled(
        if: GlewlwydEnvironment.isConfigured, "needs glewlwyd: `make test` starts it (scripts/glewlwyd.sh) and sets OAUTH2_IT_GLEWLWYD"))
struct GlewlwydDPoPTokenTests {
    @Test func aClientCredentialsTokenIsBoundToTheGrantsKey() async throws {
        let run = try GlewlwydEnvironment.load()
        var configuration = try await run.configuration(client: "confidential")
        #expect(!configuration.dpopSigningAlgValuesSupported.isEmpty, "glewlwyd's metadata lists its DPoP algorithms")
        for algorithm in [JWSAlgorithm.es256, .edDSA] {
            configuration.dpop = DPoPSettings(algorithm: algorithm)
            let transport = CurlTransport()
            let provider = try OAuth2Provider(configuration: configuration, transport: transport)
            let token = try await provider.token(for: .clientCredentials(scopes: ["api"]))
            await transport.shutdown()
            let key = try #require(token.dpopKey)
            #expect(key.algorithm == algorithm)
            #expect(token.tokenType.lowercased() == "dpop")
            #expect(try GlewlwydEnvironment.claims(of: token.accessToken.value)["cnf"]?["jkt"] as? String == key.thumbprint)
        }
    }

    /// `oidcnonce` answers the first proof with `use_dpop_nonce`: one retry,
    /// and the nonce is kept for the next grant, which needs no retry.
    @Test func theServersNonceIsRetriedOnceAndKept() async throws {
        let run = try GlewlwydEnvironment.load()
        var configuration = try await run.configuration(plugin: "oidcnonce", client: "confidential")
        configuration.dpop = DPoPSettings()
        let transport = RecordingTransport()
        let provider = try OAuth2Provider(configuration: configuration, transport: transport)
        let first = try await provider.token(for: .clientCredentials(scopes: ["api"]))
        let tokenRequests = { transport.requests.filter { $0.url == configuration.tokenEndpoint } }
        #expect(tokenRequests().count == 2)
        #expect(tokenRequests().allSatisfy { $0.headers[HTTPField.Name("DPoP")!] != nil })
        #expect(try GlewlwydEnvironment.claims(of: first.accessToken.value)["cnf"]?["jkt"] as? String == first.dpopKey?.thumbprint)

        let second = try await provider.token(for: .clientCredentials(scopes: ["api"]))
        #expect(tokenRequests().count == 3, "the kept nonce spares the second grant a round trip")
        #expect(second.dpopKey != first.dpopKey)
        await transport.inner.shutdown()
    }

    /// A public client's sign-in: the code bound to the key by `dpop_jkt`,
    /// exchanged after a nonce retry, the token and key sealed in an encrypted
    /// file store; then another process's store on the same directory, without
    /// DPoP in its configuration (a later CLI command), refreshes the bound
    /// refresh token with the key it read back, which glewlwyd requires, and
    /// the grant keeps it.
    @Test func aPublicClientsBoundGrantIsRefreshedWithTheStoredKey() async throws {
        let run = try GlewlwydEnvironment.load()
        var configuration = try await run.configuration(plugin: "oidcnonce", client: "public")
        configuration.dpop = DPoPSettings()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("dpop-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let storeKey = (0..<32).map { _ in UInt8.random(in: .min ... .max) }
        let store = try FileTokenStore(directory: directory, encryption: .aesGCM(try .init(bytes: storeKey)))
        let transport = CurlTransport()
        let signIn = try OAuth2Provider(configuration: configuration, store: store, transport: transport)
        let client = signIn.client(account: "alice")
        let pending = try await client.authorizationURL(redirectURI: URL(string: run.redirectURI)!, scopes: ["api"])
        let key = try #require(pending.dpopKey)
        let redirect = try await run.browse(pending.url.absoluteString)
        let token = try await client.authenticate(.authorizationCode(redirect: redirect))
        #expect(token.dpopKey == key)
        #expect(try GlewlwydEnvironment.claims(of: token.accessToken.value)["cnf"]?["jkt"] as? String == key.thumbprint)
        let refreshToken = try #require(token.refreshToken)

        configuration.dpop = nil
        let otherStore = try FileTokenStore(directory: directory, encryption: .aesGCM(try .init(bytes: storeKey)))
        let later = try OAuth2Provider(configuration: configuration, store: otherStore, transport: transport)
        let refreshed = try await later.client(account: "alice").refreshAccessToken()
        #expect(refreshed.dpopKey == key)
        #expect(refreshed.refreshToken != refreshToken, "glewlwyd rotates refresh tokens")
        #expect(try GlewlwydEnvironment.claims(of: refreshed.accessToken.value)["cnf"]?["jkt"] as? String == key.thumbprint)
        #expect(try await store.load(account: "alice")?.dpopKey == key)
        await transport.shutdown()
    }

    /// glewlwyd refuses a replayed `jti`: every poll of the device grant
    /// carries a new proof, all of the one key the token is then bound to.
    @Test func everyDevicePollCarriesANewProofOfTheGrantsKey() async throws {
        let run = try GlewlwydEnvironment.load()
        var configuration = try await run.configuration(plugin: "oidcnonce", client: "public")
        configuration.deviceAuthorizationEndpoint = URL(string: try run.endpoint("device", plugin: "oidcnonce"))!
        configuration.dpop = DPoPSettings()
        let transport = RecordingTransport()
        let provider = try OAuth2Provider(configuration: configuration, transport: transport)
        let authorization = try await provider.startDeviceAuthorization(scopes: ["api"])
        let polling = Task { try await provider.token(for: .deviceCode(authorization, scopes: ["api"])) }
        try await Task.sleep(for: authorization.interval + .seconds(1))
        try await run.approveDevice(authorization)
        let token = try await polling.value
        let key = try #require(token.dpopKey)
        let proofs = try transport.requests.filter { $0.url == configuration.tokenEndpoint }.map { request in
            try GlewlwydEnvironment.payload(of: try #require(request.headers[HTTPField.Name("DPoP")!]))
        }
        #expect(proofs.count >= 2, "a pending poll, then the approved one")
        #expect(Set(proofs.compactMap { $0["jti"] as? String }).count == proofs.count)
        #expect(try GlewlwydEnvironment.claims(of: token.accessToken.value)["cnf"]?["jkt"] as? String == key.thumbprint)
        await transport.inner.shutdown()
    }

    /// A bound grant's revocation carries proofs (glewlwyd does not ask for
    /// them, and takes the request all the same); the key goes with the token.
    @Test func aBoundGrantIsRevokedAndItsKeyDeleted() async throws {
        let run = try GlewlwydEnvironment.load()
        var configuration = try await run.configuration(client: "confidential")
        configuration.revocationEndpoint = URL(string: try run.endpoint("revocation", plugin: "oidc"))!
        configuration.allowsPasswordGrant = true
        configuration.dpop = DPoPSettings()
        let store = InMemoryTokenStore()
        let transport = RecordingTransport()
        let provider = try OAuth2Provider(configuration: configuration, store: store, transport: transport)
        let client = provider.client(account: "alice")
        let token = try await client.authenticate(.password(username: "alice", password: Secret(try run.password), scopes: ["api"]))
        #expect(token.dpopKey != nil)
        try await client.revoke()
        let revocations = transport.requests.filter { $0.url == configuration.revocationEndpoint }
        #expect(!revocations.isEmpty)
        #expect(revocations.allSatisfy { $0.headers[HTTPField.Name("DPoP")!] != nil })
        #expect(try await store.load(account: "alice") == nil)
        await transport.inner.shutdown()
    }

    /// The resource server's `/downgrade/token` passes the request on to
    /// glewlwyd without its proof: a real bearer answer to a DPoP request.
    @Test func aBearerAnswerToADPoPRequestIsRefusedUnlessAllowed() async throws {
        let run = try GlewlwydEnvironment.load()
        var configuration = try await run.configuration(client: "confidential")
        configuration.tokenEndpoint = URL(string: run.downgradeTokenEndpoint)!
        configuration.dpop = DPoPSettings()
        let transport = CurlTransport()
        let refusing = try OAuth2Provider(configuration: configuration, transport: transport)
        let error = try await #require(throws: OAuth2Error.self) { try await refusing.token(for: .clientCredentials(scopes: ["api"])) }
        #expect(error.code == .dpopDowngraded)

        configuration.dpop = DPoPSettings(allowsBearerDowngrade: true)
        let allowing = try OAuth2Provider(configuration: configuration, transport: transport)
        let token = try await allowing.token(for: .clientCredentials(scopes: ["api"]))
        #expect(token.tokenType.lowercased() == "bearer")
        #expect(token.dpopKey == nil)
        #expect(try GlewlwydEnvironment.claims(of: token.accessToken.value)["cnf"] == nil)
        await transport.shutdown()
    }
}

/// A glewlwyd run's env.json (`OAUTH2_IT_GLEWLWYD`), the parts these tests read.
struct GlewlwydEnvironment {
    let environment: [String: Any]

    static let isConfigured = !(ProcessInfo.processInfo.environment["OAUTH2_IT_GLEWLWYD"] ?? "").isEmpty

    static func load() throws -> GlewlwydEnvironment {
        let path = try #require(ProcessInfo.processInfo.environment["OAUTH2_IT_GLEWLWYD"])
        let object = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path)))
        return GlewlwydEnvironment(environment: try #require(object as? [String: Any]))
    }

    private func object(_ keys: String...) throws -> [String: Any] {
        var value: Any = environment
        for key in keys { value = try #require((value as? [String: Any])?[key], "env.json has no \(keys)") }
        return try #require(value as? [String: Any])
    }

    var redirectURI: String { ((environment["redirect_uris"] as? [String]) ?? [])[0] }
    var downgradeTokenEndpoint: String { (try? object("resource"))?["downgrade_token"] as? String ?? "" }

    /// A configuration discovered from a plugin instance's issuer, for one of the run's clients.
    func configuration(plugin: String = "oidc", client name: String) async throws -> OAuth2Configuration {
        let instance = try object("plugins", plugin)
        let issuer = try #require(instance["issuer"] as? String)
        let client = try object("clients", name)
        let clientID = try #require(client["client_id"] as? String)
        let transport = CurlTransport()
        let configuration = try await OAuth2Configuration.discover(
            issuer: issuer, clientID: clientID, clientSecret: (client["client_secret"] as? String).map(Secret.init), transport: transport)
        await transport.shutdown()
        return configuration
    }

    /// An endpoint of a plugin instance (`device`, `revocation`, …).
    func endpoint(_ name: String, plugin: String) throws -> String {
        try #require(try object("plugins", plugin)[name] as? String)
    }

    /// The user's password.
    var password: String {
        get throws { try #require(try object("user")["password"] as? String) }
    }

    /// Plays the user approving a device at its verification URI.
    func approveDevice(_ authorization: DeviceAuthorization) async throws {
        let browser = try #require(environment["browser"] as? [String])
        var arguments = Array(browser.dropFirst())
        if let complete = authorization.verificationURIComplete {
            arguments += ["--device", complete.absoluteString]
        } else {
            arguments += ["--device", authorization.verificationURI.absoluteString, "--user-code", authorization.userCode]
        }
        arguments += ["--username", "alice", "--password", try password]
        let result = try await Subprocess.run(browser[0], arguments, environment: ProcessInfo.processInfo.environment)
        #expect(result.status == 0 && result.stdout.contains("authorized"), "\(result.stderr)")
    }

    /// Plays the user's browser at an authorize URL; returns the redirect.
    func browse(_ url: String) async throws -> String {
        let browser = try #require(environment["browser"] as? [String])
        let user = try object("user")
        let password = try #require(user["password"] as? String)
        let result = try await Subprocess.run(
            browser[0], Array(browser.dropFirst()) + [url, "--username", "alice", "--password", password],
            environment: ProcessInfo.processInfo.environment)
        #expect(result.status == 0, "\(result.stderr)")
        return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The claims of a JWT access token that are objects (`cnf`), unverified.
    static func claims(of jwt: String) throws -> [String: [String: Any]] {
        try payload(of: jwt).compactMapValues { $0 as? [String: Any] }
    }

    /// A JWT's payload, unverified (the test reads what glewlwyd bound, or what a proof claimed).
    static func payload(of jwt: String) throws -> [String: Any] {
        let parts = jwt.split(separator: ".")
        try #require(parts.count == 3)
        var base64 = parts[1].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        let data = try #require(Data(base64Encoded: base64))
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }
}
