import Foundation
import OAuth2
import Testing

/// The CLI with `--dpop` against glewlwyd and the independent resource server
/// beside it (auth0-api-python and jwcrypto verify the proofs;
/// Tests/Glewlwyd/README.md): what a person runs, and what the other side
/// recorded.
@Suite(.enabled(if: GlewlwydRun.isConfigured, "needs glewlwyd: `make test` starts it and sets OAUTH2_IT_GLEWLWYD"))
struct GlewlwydCommandLineDPoPTests {
    /// env.json's members the shared `GlewlwydRun` does not decode.
    struct Extra {
        let me: String
        let nonceMe: String
        let requestLog: String

        init(path: String) throws {
            let env = try JSONObject(String(decoding: try Data(contentsOf: URL(fileURLWithPath: path)), as: UTF8.self))
            let resource = try #require(env["resource"] as? [String: Any])
            me = try #require(resource["me"] as? String)
            nonceMe = try #require(resource["nonce_me"] as? String)
            requestLog = try #require(resource["requests"] as? String)
        }
    }

    /// The resource server's log entries for proofs made with the key `jkt` for `url`.
    static func proofs(of jkt: String, for url: String, in log: String) async throws -> [[String: Any]] {
        let answer = try await Provider.send(HTTPTransportRequest(url: try #require(URL(string: log))))
        let entries = try #require(try JSONObject(String(decoding: answer.body, as: UTF8.self))["requests"] as? [[String: Any]])
        return entries.filter { entry in
            (entry["proof"] as? [String: Any])?["jkt"] as? String == jkt && (entry["url"] as? String)?.hasPrefix(url) == true
        }
    }

    /// The nonce question of the issue: a command-line tool must not pay an
    /// extra round trip on every run where the server demands nonces. The
    /// first `call` learns the resource server's nonce (401 use_dpop_nonce,
    /// then 200); the CLI keeps it beside the token store, so the second
    /// `call` is one request; without the file, two again. The resource
    /// server counts; the counts are exact.
    @Test func aSecondCallStartsWithTheResourceNonceTheFirstLearnt() async throws {
        let (run, path) = try GlewlwydRun.plain()
        let extra = try Extra(path: path)
        let cli = try CLI()
        let options = try run.options(client: "confidential", for: cli) + ["--scope", "api"]
        let grant = try await cli.run(["client-credentials", "--dpop"] + options)
        #expect(grant.status == 0, "\(grant.stderr)")
        let jkt = try #require(try await cli.storedToken()?.dpopKey?.thumbprint)

        var counts: [Int] = []
        for removeTheFile in [false, false, true] {
            if removeTheFile {
                let file = cli.store + "/dpop-nonces.json"
                let saved = try? JSONObject(try String(contentsOfFile: file, encoding: .utf8))
                #expect((saved?["nonces"] as? [[String: Any]])?.isEmpty == false, "the nonce is kept beside the store")
                #expect((try? FileManager.default.attributesOfItem(atPath: file)[.posixPermissions] as? Int) == 0o600)
                try? FileManager.default.removeItem(atPath: file)
            }
            let before = try await Self.proofs(of: jkt, for: extra.nonceMe, in: extra.requestLog).count
            let call = try await cli.run(["call", extra.nonceMe] + options)
            #expect(call.status == 0, "\(call.stderr)")
            counts.append(try await Self.proofs(of: jkt, for: extra.nonceMe, in: extra.requestLog).count - before)
        }

        // First run: the nonce learnt; second: it is used at once; without the file: learnt again.
        #expect(counts == [2, 1, 2])
    }

    /// The same at a token endpoint: glewlwyd's `oidcnonce` instance refuses a
    /// token request whose proof has no nonce (400 use_dpop_nonce). A second
    /// `client-credentials --dpop` starts with the nonce the first learnt and
    /// is not refused; without the file it is again. glewlwyd keeps no count
    /// a test can read, so the CLI's own debug line for the retry counts.
    @Test func aSecondGrantStartsWithTheTokenEndpointsNonceTheFirstLearnt() async throws {
        let (run, path) = try GlewlwydRun.plain()
        let env = try JSONObject(String(decoding: try Data(contentsOf: URL(fileURLWithPath: path)), as: UTF8.self))
        let nonceIssuer = try #require(((env["plugins"] as? [String: Any])?["oidcnonce"] as? [String: Any])?["issuer"] as? String)
        let cli = try CLI()
        let client = try run.client("confidential")
        let options = [
            "--issuer", nonceIssuer, "--client-id", client.clientID, "--store", cli.store, "--scope", "api",
            "--client-secret-file", try cli.writeFile("secret", try #require(client.clientSecret)),
        ]

        var retries: [Int] = []
        for removeTheFile in [false, false, true] {
            if removeTheFile { try? FileManager.default.removeItem(atPath: cli.store + "/dpop-nonces.json") }
            let grant = try await cli.run(["client-credentials", "--dpop", "--verbose"] + options)
            #expect(grant.status == 0, "\(grant.stderr)")
            retries.append(grant.stderr.components(separatedBy: "the server asked for a DPoP nonce; sending again with it").count - 1)
        }

        #expect(retries == [1, 0, 1])
    }

    /// `--dpop` (and `--dpop-algorithm`) on each grant command: glewlwyd
    /// binds the access token it issues to the new key (its `cnf.jkt` is the
    /// stored key's RFC 7638 thumbprint), and `token` shows that binding.
    @Test(arguments: [
        ("client-credentials", "ES256"), ("password", "EdDSA"), ("device", "PS256"),
    ])
    func aGrantCommandWithDPoPBindsItsTokensToANewKey(command: String, algorithm: String) async throws {
        let (run, _) = try GlewlwydRun.plain()
        let cli = try CLI()
        let client = command == "device" ? "public" : "confidential"
        let options = try run.options(client: client, for: cli) + ["--scope", "api"]
        let arguments = [command, "--dpop-algorithm", algorithm] + options

        let result: Subprocess.Result
        switch command {
        case "password":
            result = try await cli.run(arguments + ["--username", run.user.username, "--password-stdin"], input: run.user.password + "\n")
        case "device":
            let process = try cli.start(arguments)
            let address = try await process.stderrLine(startingWith: "Or open this address, which carries the code: ")
            _ = try await run.browse(["--device", address])
            result = try await process.wait()
        default:
            result = try await cli.run(arguments)
        }

        #expect(result.status == 0, "\(result.stderr)")
        let token = try #require(try await cli.storedToken())
        let key = try #require(token.dpopKey)
        #expect(key.algorithm.rawValue == algorithm)
        #expect(token.tokenType.lowercased() == "dpop")
        #expect(try GlewlwydEnvironment.claims(of: token.accessToken.value)["cnf"]?["jkt"] as? String == key.thumbprint)
        let shown = try await cli.run(["token", "--format", "json"] + options)
        #expect((try JSONObject(shown.stdout)["binding"] as? [String: Any])?["jkt"] as? String == key.thumbprint)
    }

    /// Sign in with `authorize --dpop` (glewlwyd's browser script), call the
    /// DPoP resource, see the binding, refresh with the stored key, revoke.
    /// A confidential client: glewlwyd's revocation endpoint wants client
    /// authentication, so a public client cannot revoke there (HTTP 401).
    @Test func aDPoPGrantFromSignInToRevocation() async throws {
        let (run, path) = try GlewlwydRun.plain()
        let extra = try Extra(path: path)
        let cli = try CLI()
        let redirectURI = try #require(run.redirectURIs.first)
        let options = try run.options(client: "confidential", for: cli) + ["--scope", "openid api", "--redirect-uri", redirectURI]

        let command = try cli.start(["authorize", "--dpop"] + options)
        let url = try await command.firstLineOfStdout()
        #expect(url.contains("dpop_jkt="), "\(url)")
        command.write(try await run.browse([url]) + "\n")
        command.closeInput()
        let signIn = try await command.wait()
        #expect(signIn.status == 0, "\(signIn.stderr)")
        let key = try #require(try await cli.storedToken()?.dpopKey)

        let shown = try await cli.run(["token", "--format", "json"] + options)
        #expect(shown.status == 0, "\(shown.stderr)")
        let summary = try JSONObject(shown.stdout)
        #expect(summary.string("token_type")?.lowercased() == "dpop")
        #expect((summary["binding"] as? [String: Any])?["jkt"] as? String == key.thumbprint)
        #expect((summary["binding"] as? [String: Any])?["type"] as? String == "dpop")

        let call = try await cli.run(["call", extra.me] + options)
        #expect(call.status == 0, "\(call.stderr)")
        #expect(try await Self.proofs(of: key.thumbprint, for: extra.me, in: extra.requestLog).contains { $0["status"] as? Int == 200 })

        let before = try #require(try await cli.storedToken())
        let refresh = try await cli.run(["refresh"] + options)
        #expect(refresh.status == 0, "\(refresh.stderr)")
        let after = try #require(try await cli.storedToken())
        #expect(after.accessToken != before.accessToken)
        #expect(after.dpopKey?.thumbprint == key.thumbprint, "the refreshed token keeps the grant's key")
        let again = try await cli.run(["call", extra.me] + options)
        #expect(again.status == 0, "\(again.stderr)")

        let revoke = try await cli.run(["revoke"] + options)
        #expect(revoke.status == 0, "\(revoke.stderr)")
        #expect(try await cli.storedToken() == nil)
        let afterRevoke = try await cli.run(["call", extra.me] + options)
        #expect(afterRevoke.status != 0)
    }
}
