import Foundation
import MutualTLSFixture
import OAuth2
import Testing

/// `--client-certificate FILE --client-key FILE` on the CLI, against nginx
/// asking for client certificates: the token endpoint sees the certificate
/// (`tls_client_auth`), the resource sees the same one with the token, and
/// a token obtained with one certificate never goes out with another or none.
@Suite(.mutualTLSServer)
struct MutualTLSCommandTests {
    private func options(_ cli: CLI, _ server: MutualTLSServer, _ client: MutualTLSServer.Client?) throws -> [String] {
        var options = [
            "--client-id", "mtls-client", "--token-url", try server.url("/token").absoluteString, "--store", cli.store,
            "--ca-file", server.caFile,
        ]
        if let client {
            options += ["--client-certificate", client.certificateFile, "--client-key", client.keyFile]
        }
        return options
    }

    /// Signs in with the CA-issued certificate (`tls_client_auth`) and returns the options used.
    private func signIn(_ cli: CLI, _ server: MutualTLSServer) async throws -> [String] {
        let options = try options(cli, server, server.issued)
        let result = try await cli.run(["client-credentials", "--auth-method", "tls_client_auth"] + options)
        #expect(result.status == 0, "\(result.stderr)")
        return options
    }

    @Test func theTokenEndpointAndTheResourceSeeTheSameCertificate() async throws {
        let server = try currentMutualTLSServer()
        let cli = try CLI()
        let options = try await signIn(cli, server)

        let stored = try #require(try await cli.storedToken())
        // nginx made the token from the certificate it saw at the token endpoint.
        #expect(stored.accessToken.value == "at-\(server.issued.sha1)")
        #expect(stored.certificateThumbprint == server.issued.sha256)

        let call = try await cli.run(["call", try server.url("/resource").absoluteString] + options)
        #expect(call.status == 0, "\(call.stderr)")
        let seen = try JSONDecoder().decode(MutualTLSServer.Seen.self, from: Data(call.stdout.utf8))
        #expect(seen.fingerprint == server.issued.sha1)
        #expect(seen.authorization == "Bearer at-\(server.issued.sha1)")
    }

    @Test func tokenSaysTheTokenIsBoundToItsCertificateAndGitIsRefusedIt() async throws {
        let server = try currentMutualTLSServer()
        let cli = try CLI()
        let options = try await signIn(cli, server)

        let json = try await cli.run(["token", "--format", "json"] + options)
        #expect(json.status == 0, "\(json.stderr)")
        let binding = try #require(try JSONObject(json.stdout)["binding"] as? [String: Any], "\(json.stdout)")
        #expect(binding["type"] as? String == "mtls")
        #expect(binding["x5t#S256"] as? String == server.issued.sha256)
        #expect(binding.count == 2, "\(binding)")

        let text = try await cli.run(["token"] + options)
        #expect(text.stdout.contains("\nbound to: client certificate x5t#S256 \(server.issued.sha256)\n"), "\(text.stdout)")

        // kubectl would send it as a bearer token, without the certificate.
        let kubernetes = try await cli.run(["token", "--format", "kubernetes"] + options)
        #expect(kubernetes.status != 0)
        #expect(kubernetes.stderr.contains("without the client certificate it needs"), "\(kubernetes.stderr)")
        #expect(!kubernetes.stdout.contains("at-"))
    }

    @Test(arguments: [false, true])
    func aBoundTokenIsNotSentWithAnotherCertificateOrNone(another: Bool) async throws {
        let server = try currentMutualTLSServer()
        let cli = try CLI()
        _ = try await signIn(cli, server)
        let path = "/resource-\(UUID().uuidString)"

        let call = try await cli.run(
            ["call", try server.url(path).absoluteString] + options(cli, server, another ? server.selfSigned : nil))

        #expect(call.status != 0)
        #expect(call.stderr.contains("certificate_mismatch"), "\(call.stderr)")
        #expect(server.accessLogLines(path: path).isEmpty)
    }

    @Test func aKeyFileOthersCanReadIsRefusedBeforeAnythingIsSent() async throws {
        let server = try currentMutualTLSServer()
        let cli = try CLI()
        let key = try cli.writeFile("open.key", try String(contentsOfFile: server.issued.keyFile, encoding: .utf8))
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: key)
        let tokenPath = "/token-\(UUID().uuidString)"

        let result = try await cli.run(
            [
                "client-credentials", "--auth-method", "tls_client_auth", "--client-id", "mtls-client",
                "--token-url", try server.url(tokenPath).absoluteString, "--store", cli.store, "--ca-file", server.caFile,
                "--client-certificate", server.issued.certificateFile, "--client-key", key,
            ])

        #expect(result.status != 0)
        #expect(result.stderr.contains("group or others"), "\(result.stderr)")
        #expect(!result.stderr.contains("PRIVATE KEY"))
        #expect(server.accessLogLines(path: tokenPath).isEmpty)
    }

    @Test func aCertificateWithoutItsKeyIsAUsageError() async throws {
        let server = try currentMutualTLSServer()
        let cli = try CLI()
        let result = try await cli.run(
            [
                "client-credentials", "--client-id", "mtls-client", "--token-url", try server.url("/token").absoluteString,
                "--store", cli.store, "--client-certificate", server.issued.certificateFile,
            ])
        #expect(result.status != 0)
        #expect(result.stderr.contains("--client-key"), "\(result.stderr)")
    }
}
