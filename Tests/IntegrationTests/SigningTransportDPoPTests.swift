import Crypto
import Foundation
import OAuth2
import Testing

/// ``SigningTransport`` with DPoP-bound tokens against implementations that
/// are not ours: Debian's glewlwyd 2.7.5 issues the tokens (bound to a key by
/// a proof made with `DPoPKey.proof`), and the resource server beside it
/// (Tests/Glewlwyd/verifier.py) checks every proof with Auth0's verifier,
/// PyPI `auth0-api-python` (`typ`, `alg`, `jwk`, signature, `htm`, `htu`,
/// `iat`, `ath`), plus `cnf.jkt`, `jti` replay and its own nonces.
///
/// `make test` starts both (`scripts/glewlwyd.sh`) and sets `OAUTH2_IT_GLEWLWYD`.
@Suite(
    .serialized,
    .enabled(
        if: ProcessInfo.processInfo.environment["OAUTH2_IT_GLEWLWYD"]?.isEmpty == false,
        "needs glewlwyd and its resource server: `make test` starts them and sets OAUTH2_IT_GLEWLWYD"))
struct SigningTransportDPoPTests {
    /// What the tests read from glewlwyd's env.json.
    struct Glewlwyd {
        let token: URL
        let resource: [String: String]
        let clientSecrets: [String: String]
        /// The plugin whose DPoP nonces are mandatory (token endpoint and userinfo).
        let nonceEndpoints: [String: String]
        let browser: [String]
        let redirectURI: String
        let password: String

        init() throws {
            let path = try #require(ProcessInfo.processInfo.environment["OAUTH2_IT_GLEWLWYD"])
            let env = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as? [String: Any])
            let plugins = try #require(env["plugins"] as? [String: Any])
            let oidc = try #require(plugins["oidc"] as? [String: Any])
            let tokenText = try #require(oidc["token"] as? String)
            token = try #require(URL(string: tokenText))
            resource = try #require(env["resource"] as? [String: String])
            let clients = try #require(env["clients"] as? [String: [String: Any]])
            clientSecrets = clients.compactMapValues { $0["client_secret"] as? String }
            nonceEndpoints = try #require(plugins["oidcnonce"] as? [String: String])
            browser = try #require(env["browser"] as? [String])
            redirectURI = try #require((env["redirect_uris"] as? [String])?.first)
            password = try #require((env["user"] as? [String: String])?["password"])
        }

        /// A DPoP-bound token for alice from the plugin with mandatory nonces:
        /// the code flow played by glewlwyd's browser script, the code exchanged
        /// with a proof, and again with the nonce the token endpoint demanded.
        func signedInWithNonces(key: DPoPKey) async throws -> AccessToken {
            let verifier = Self.base64URL(Data(SHA256.hash(data: Array(UUID().uuidString.utf8))))
            let challenge = Self.base64URL(Data(SHA256.hash(data: Array(verifier.utf8))))
            let authorizeText = try #require(nonceEndpoints["authorize"])
            var authorize = try #require(URLComponents(string: authorizeText))
            authorize.queryItems = [
                URLQueryItem(name: "response_type", value: "code"), URLQueryItem(name: "client_id", value: "public"),
                URLQueryItem(name: "redirect_uri", value: redirectURI), URLQueryItem(name: "scope", value: "openid api"),
                URLQueryItem(name: "state", value: "s-1"), URLQueryItem(name: "nonce", value: "n-1"),
                URLQueryItem(name: "code_challenge", value: challenge), URLQueryItem(name: "code_challenge_method", value: "S256"),
            ]
            let url = try #require(authorize.url?.absoluteString)
            let played = try await Subprocess.run(
                browser[0], Array(browser.dropFirst()) + [url, "--username", "alice", "--password", password],
                environment: ProcessInfo.processInfo.environment)
            #expect(played.status == 0, "\(played.stderr)")
            let redirect = try #require(URLComponents(string: played.stdout.trimmingCharacters(in: .whitespacesAndNewlines)))
            let code = try #require(redirect.queryItems?.first { $0.name == "code" }?.value)
            let tokenText = try #require(nonceEndpoints["token"])
            let token = try #require(URL(string: tokenText))
            var form = URLComponents()
            form.queryItems = [
                URLQueryItem(name: "grant_type", value: "authorization_code"), URLQueryItem(name: "code", value: code),
                URLQueryItem(name: "redirect_uri", value: redirectURI), URLQueryItem(name: "client_id", value: "public"),
                URLQueryItem(name: "code_verifier", value: verifier),
            ]
            let body = Data((form.percentEncodedQuery ?? "").utf8)
            var nonce: String?
            for _ in 0..<2 {
                let proof = try key.proof(method: "POST", url: token.absoluteString, nonce: nonce, now: Date())
                let request = HTTPTransportRequest(
                    method: .post, url: token,
                    headers: [
                        .contentType: "application/x-www-form-urlencoded", .accept: "application/json",
                        HTTPField.Name("DPoP")!: proof.value,
                    ],
                    body: body)
                let response = try await SigningTransportDPoPTests.withCurl { try await $0.send(request) }
                if response.status == 200 {
                    let object = try #require(try JSONSerialization.jsonObject(with: response.body) as? [String: Any])
                    var bound = AccessToken(
                        accessToken: Secret(try #require(object["access_token"] as? String)),
                        tokenType: try #require(object["token_type"] as? String))
                    bound.dpopKey = key
                    return bound
                }
                nonce = try #require(response.headers[HTTPField.Name("DPoP-Nonce")!], "HTTP \(response.status)")
            }
            throw OAuth2Error(code: .invalidGrant, message: "glewlwyd kept asking for a nonce at its token endpoint")
        }

        static func base64URL(_ data: Data) -> String {
            data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: "")
        }

        func url(_ name: String) throws -> URL {
            let text = try #require(resource[name])
            return try #require(URL(string: text))
        }

        /// A client_credentials token for `client`, bound to `key` by a proof
        /// made with the contract's `DPoPKey.proof` when there is a key.
        func token(client: String, key: DPoPKey?) async throws -> AccessToken {
            let secret = try #require(clientSecrets[client])
            var request = HTTPTransportRequest(
                method: .post, url: token,
                headers: [
                    .contentType: "application/x-www-form-urlencoded", .accept: "application/json",
                    .authorization: "Basic \(Data("\(client):\(secret)".utf8).base64EncodedString())",
                ],
                body: Data("grant_type=client_credentials&scope=api".utf8))
            if let key {
                let proof = try key.proof(method: "POST", url: token.absoluteString, now: Date())
                request.headers.append(HTTPField(name: HTTPField.Name("DPoP")!, value: proof.value))
            }
            let response = try await SigningTransportDPoPTests.withCurl { try await $0.send(request) }
            #expect(response.status == 200, "\(String(decoding: response.body, as: UTF8.self))")
            let body = try #require(try JSONSerialization.jsonObject(with: response.body) as? [String: Any])
            var token = AccessToken(
                accessToken: Secret(try #require(body["access_token"] as? String)), tokenType: try #require(body["token_type"] as? String))
            token.dpopKey = key
            return token
        }

        /// The verifier's log entries for the proofs with these `jti`s, in order.
        func logged(jtis: [String]) async throws -> [[String: Any]] {
            let log = try url("requests")
            let response = try await SigningTransportDPoPTests.withCurl { try await $0.send(HTTPTransportRequest(url: log)) }
            let body = try #require(try JSONSerialization.jsonObject(with: response.body) as? [String: Any])
            let entries = try #require(body["requests"] as? [[String: Any]])
            return jtis.compactMap { jti in entries.last { ($0["proof"] as? [String: Any])?["jti"] as? String == jti } }
        }
    }

    /// Hands out one token and, when asked to replace it, the same again.
    struct OneToken: TokenSource {
        let token: AccessToken
        func token() async throws -> AccessToken { token }
        func token(replacing rejected: AccessToken) async throws -> AccessToken { token }
    }

    /// Runs `body` with a CurlTransport of its own, shut down after.
    static func withCurl<T: Sendable>(_ body: (CurlTransport) async throws -> T) async throws -> T {
        let transport = CurlTransport()
        do {
            let value = try await body(transport)
            await transport.shutdown()
            return value
        } catch {
            await transport.shutdown()
            throw error
        }
    }

    /// Records what goes out, over a real CurlTransport.
    final class Recorder: HTTPTransport {
        let inner = CurlTransport()
        private let sent = LockedValue<[HTTPTransportRequest]>([])
        var requests: [HTTPTransportRequest] { sent.withLock { $0 } }

        func send(_ request: HTTPTransportRequest) async throws -> HTTPTransportResponse {
            sent.withLock { $0.append(request) }
            return try await inner.send(request)
        }

        /// The `jti` of each proof sent, in order.
        func jtis() throws -> [String] {
            try requests.compactMap { request in
                guard let proof = request.headers[HTTPField.Name("DPoP")!] else { return nil }
                return try CompactJWS(proof).payloadObject()["jti"]?.stringValue
            }
        }
    }

    @Test func aBoundTokenIsAcceptedWithOurProofByAuth0sVerifier() async throws {
        let glewlwyd = try Glewlwyd()
        let key = try DPoPKey.generate()
        let token = try await glewlwyd.token(client: "dpop-bound", key: key)
        #expect(token.tokenType == "DPoP")
        let recorder = Recorder()

        let response = try await SigningTransport(wrapping: recorder, tokenSource: OneToken(token: token)).send(
            HTTPTransportRequest(url: try glewlwyd.url("me")))

        #expect(response.status == 200, "\(String(decoding: response.body, as: UTF8.self))")
        #expect(recorder.requests.first?.headers[.authorization]?.hasPrefix("DPoP ") == true)
        let logged = try await glewlwyd.logged(jtis: try recorder.jtis())
        #expect(logged.count == 1)
        #expect(logged.first?["verified_by"] as? String == "auth0-api-python")
        #expect(logged.first?["status"] as? Int == 200)
        #expect((logged.first?["proof"] as? [String: Any])?["jkt"] as? String == key.thumbprint)
        await recorder.inner.shutdown()
    }

    @Test func aNonceTheResourceDemandsIsAnsweredOnceAndThenSentFromTheStart() async throws {
        let glewlwyd = try Glewlwyd()
        let token = try await glewlwyd.token(client: "dpop-bound", key: try DPoPKey.generate())
        let recorder = Recorder()
        let signing = SigningTransport(wrapping: recorder, tokenSource: OneToken(token: token))
        let url = try glewlwyd.url("nonce_me")

        let first = try await signing.send(HTTPTransportRequest(url: url))
        let second = try await signing.send(HTTPTransportRequest(url: url))

        #expect(first.status == 200 && second.status == 200)
        #expect(recorder.requests.count == 3, "one use_dpop_nonce, then none")
        let logged = try await glewlwyd.logged(jtis: try recorder.jtis())
        #expect(logged.map { $0["status"] as? Int } == [401, 200, 200])
        #expect(logged.first?["error"] as? String == "use_dpop_nonce")
        let nonces = logged.map { ($0["proof"] as? [String: Any])?["nonce"] as? String }
        #expect(nonces[0] == nil && nonces[1] != nil && nonces[2] == nonces[1])
        await recorder.inner.shutdown()
    }

    @Test func aResourceThatKeepsAskingForANonceIsTheNonceLoopErrorAfterOneRetry() async throws {
        let glewlwyd = try Glewlwyd()
        let token = try await glewlwyd.token(client: "dpop-bound", key: try DPoPKey.generate())
        let recorder = Recorder()

        let error = await #expect(throws: OAuth2Error.self) {
            _ = try await SigningTransport(wrapping: recorder, tokenSource: OneToken(token: token)).send(
                HTTPTransportRequest(url: try glewlwyd.url("nonce_loop")))
        }

        #expect(error?.code == .dpopNonceLoop)
        #expect(recorder.requests.count == 2)
        await recorder.inner.shutdown()
    }

    // Each hop's proof names that hop's URL and method: the verifier refuses
    // a proof made for the first hop's URL at the second (shown below), and
    // accepts ours there.
    @Test(arguments: [(HTTPRequest.Method.get, 302, "GET"), (.post, 303, "GET"), (.post, 307, "POST")])
    func aRedirectedRequestGetsAProofTheVerifierAcceptsOnEachHop(method: HTTPRequest.Method, status: Int, hopMethod: String)
        async throws
    {
        let glewlwyd = try Glewlwyd()
        let token = try await glewlwyd.token(client: "dpop-bound", key: try DPoPKey.generate())
        let recorder = Recorder()
        let me = try glewlwyd.url("me")
        let base = try #require(glewlwyd.resource["base_url"])
        let start = try #require(URL(string: "\(base)/api/redirect?to=/api/me&status=\(status)"))

        let response = try await SigningTransport(wrapping: recorder, tokenSource: OneToken(token: token)).send(
            HTTPTransportRequest(method: method, url: start, body: method == .post ? Data("a=1".utf8) : nil, redirects: .follow))

        #expect(response.status == 200, "\(String(decoding: response.body, as: UTF8.self))")
        #expect(recorder.requests.map(\.url) == [start, me])
        let proofs = try recorder.requests.map { request in
            let proof = try #require(request.headers[HTTPField.Name("DPoP")!])
            return try CompactJWS(proof).payloadObject()
        }
        #expect(proofs.map { $0["htu"]?.stringValue } == ["\(base)/api/redirect", me.absoluteString])
        #expect(proofs.last?["htm"]?.stringValue == hopMethod)
        let logged = try await glewlwyd.logged(jtis: try recorder.jtis())
        #expect(logged.last?["status"] as? Int == 200)
        #expect(logged.last?["verified_by"] as? String == "auth0-api-python")
        await recorder.inner.shutdown()
    }

    @Test func theVerifierRefusesAProofMadeForAnotherURL() async throws {
        let glewlwyd = try Glewlwyd()
        let key = try DPoPKey.generate()
        let token = try await glewlwyd.token(client: "dpop-bound", key: key)
        let me = try glewlwyd.url("me")
        let base = try #require(glewlwyd.resource["base_url"])
        let elsewhere = "\(base)/api/redirect"
        let proof = try key.proof(method: "GET", url: elsewhere, accessToken: token.accessToken, now: Date())
        let request = HTTPTransportRequest(
            url: me, headers: [.authorization: "DPoP \(token.accessToken.value)", HTTPField.Name("DPoP")!: proof.value])

        let response = try await SigningTransportDPoPTests.withCurl { try await $0.send(request) }

        #expect(response.status == 401)
        let challenge = response.headers[.wwwAuthenticate] ?? ""
        #expect(challenge.contains("invalid_dpop_proof"), "\(challenge)")
    }

    // glewlwyd's own userinfo endpoint is a second, independent resource
    // server: it checks the proof (ath included) and demands its nonce.
    @Test func glewlwydsUserinfoTakesOurProofAndItsNonceIsAnsweredOnce() async throws {
        let glewlwyd = try Glewlwyd()
        let token = try await glewlwyd.signedInWithNonces(key: try DPoPKey.generate())
        #expect(token.tokenType == "DPoP")
        let recorder = Recorder()
        let signing = SigningTransport(wrapping: recorder, tokenSource: OneToken(token: token))
        let userinfoText = try #require(glewlwyd.nonceEndpoints["userinfo"])
        let userinfo = try #require(URL(string: userinfoText))

        let first = try await signing.send(HTTPTransportRequest(url: userinfo, headers: [.accept: "application/json"]))
        let second = try await signing.send(HTTPTransportRequest(url: userinfo, headers: [.accept: "application/json"]))

        #expect(first.status == 200, "\(String(decoding: first.body, as: UTF8.self))")
        #expect(second.status == 200)
        let sub = try #require(try JSONSerialization.jsonObject(with: first.body) as? [String: Any])["sub"] as? String
        #expect(sub?.isEmpty == false)
        let nonces = try recorder.requests.map { request in
            let proof = try #require(request.headers[HTTPField.Name("DPoP")!])
            return try CompactJWS(proof).payloadObject()["nonce"]?.stringValue
        }
        #expect(nonces.count == 3, "one use_dpop_nonce, then the nonce from the start: \(nonces)")
        #expect(nonces.first == .some(nil) && nonces.dropFirst().allSatisfy { $0 != nil })
        await recorder.inner.shutdown()
    }

    @Test func aBearerTokenAtADPoPOnlyResourceIsDPoPRequiredWithoutARefresh() async throws {
        let glewlwyd = try Glewlwyd()
        let token = try await glewlwyd.token(client: "confidential", key: nil)
        #expect(token.tokenType.lowercased() == "bearer")
        let recorder = Recorder()

        let error = await #expect(throws: OAuth2Error.self) {
            _ = try await SigningTransport(wrapping: recorder, tokenSource: OneToken(token: token)).send(
                HTTPTransportRequest(url: try glewlwyd.url("me")))
        }

        #expect(error?.code == .dpopRequired)
        #expect(recorder.requests.count == 1)
        await recorder.inner.shutdown()
    }
}
