import Foundation
import OAuth2
import Testing

/// Mutual TLS (RFC 8705) against glewlwyd behind its TLS front, a provider
/// that is not ours: `tls_client_auth` and `self_signed_tls_client_auth` at
/// its `mtls_endpoint_aliases`, a token bound to our certificate
/// (`cnf.x5t#S256` equal to ``ClientCertificate/thumbprint``), taken by the
/// mTLS resource server (jwcrypto) with that certificate, and never sent with another.
@Suite(.enabled(if: GlewlwydRun.tlsIsConfigured, "needs glewlwyd behind its TLS front: OAUTH2_IT_GLEWLWYD_TLS"))
struct GlewlwydMutualTLSTests {
    /// What these tests read of env.json beyond ``GlewlwydRun``.
    struct MutualTLS: Decodable {
        struct TLS: Decodable {
            let ca: String
            let clientCertificate: String
            let clientKey: String
            let otherClientCertificate: String
            let otherClientKey: String
            let selfSignedCertificate: String
            let selfSignedKey: String

            enum CodingKeys: String, CodingKey {
                case ca
                case clientCertificate = "client_certificate"
                case clientKey = "client_key"
                case otherClientCertificate = "other_client_certificate"
                case otherClientKey = "other_client_key"
                case selfSignedCertificate = "self_signed_certificate"
                case selfSignedKey = "self_signed_key"
            }
        }

        struct Resource: Decodable {
            let mtlsMe: String

            enum CodingKeys: String, CodingKey {
                case mtlsMe = "mtls_me"
            }
        }

        let tls: TLS
        let resource: Resource
    }

    private func load() throws -> (GlewlwydRun, MutualTLS) {
        let (run, path) = try GlewlwydRun.behindTLS()
        return (run, try JSONDecoder().decode(MutualTLS.self, from: Data(contentsOf: URL(fileURLWithPath: path))))
    }

    /// The certificate and a private copy of its key (mode 0600, as the CLI requires).
    private func files(_ cli: CLI, certificate: String, key: String) throws -> [String] {
        let copy = try cli.writeFile(URL(fileURLWithPath: key).lastPathComponent, try String(contentsOfFile: key, encoding: .utf8))
        return ["--client-certificate", certificate, "--client-key", copy]
    }

    /// The `cnf` claim of a JWT access token.
    private func confirmation(of token: String) throws -> [String: Any]? {
        let parts = token.split(separator: ".")
        guard parts.count == 3 else { return nil }
        var payload = parts[1].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        payload += String(repeating: "=", count: (4 - payload.count % 4) % 4)
        let data = try #require(Data(base64Encoded: payload))
        return (try JSONSerialization.jsonObject(with: data) as? [String: Any])?["cnf"] as? [String: Any]
    }

    @Test(arguments: [("mtls", "tls_client_auth"), ("mtls-self", "self_signed_tls_client_auth")])
    func aCertificateBoundTokenGoesToTheResourceWithItsCertificateOnly(client: String, method: String) async throws {
        let (run, mtls) = try load()
        let cli = try CLI()
        let (certificate, key) =
            client == "mtls"
            ? (mtls.tls.clientCertificate, mtls.tls.clientKey) : (mtls.tls.selfSignedCertificate, mtls.tls.selfSignedKey)
        let options = try run.options(client: client, for: cli) + files(cli, certificate: certificate, key: key)

        let signIn = try await cli.run(["client-credentials", "--auth-method", method, "--scope", "api"] + options)
        #expect(signIn.status == 0, "\(signIn.stderr)")

        let token = try #require(try await cli.storedToken())
        let thumbprint = try ClientCertificate(certificateFile: certificate, keyFile: files(cli, certificate: certificate, key: key)[3])
            .thumbprint
        #expect(token.certificateThumbprint == thumbprint)
        // glewlwyd bound the token to the certificate our handshake presented.
        #expect(try confirmation(of: token.accessToken.value)?["x5t#S256"] as? String == thumbprint)
        // The token endpoint was the metadata's mTLS alias.
        #expect(token.binding?.tokenEndpoint.contains("/mtls/") == true)

        let call = try await cli.run(["call", mtls.resource.mtlsMe] + options)
        #expect(call.status == 0, "\(call.stderr)")
        #expect(call.stdout.contains(thumbprint), "\(call.stdout)")

        let other = try await cli.run(
            ["call", mtls.resource.mtlsMe] + run.options(client: client, for: cli)
                + files(cli, certificate: mtls.tls.otherClientCertificate, key: mtls.tls.otherClientKey))
        #expect(other.status != 0)
        #expect(other.stderr.contains("certificate_mismatch"), "\(other.stderr)")
    }

    @Test func glewlwydRefusesTLSClientAuthWithAnotherClientsCertificate() async throws {
        let (run, mtls) = try load()
        let cli = try CLI()
        let result = try await cli.run(
            ["client-credentials", "--auth-method", "tls_client_auth", "--scope", "api"] + run.options(client: "mtls", for: cli)
                + files(cli, certificate: mtls.tls.otherClientCertificate, key: mtls.tls.otherClientKey))
        #expect(result.status != 0)
        #expect(try await cli.storedToken() == nil)
    }
}
