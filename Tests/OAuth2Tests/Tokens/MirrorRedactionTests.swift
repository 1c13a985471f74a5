import Foundation
import Testing
@testable import OAuth2

/// `dump`, `Mirror` and debuggers show no secret of the framework's values,
/// only what their descriptions show.
@Suite struct MirrorRedactionTests {
    /// Distinct first characters, so that finding a prefix means a leak.
    static let secrets = [
        "qx1-access-token-secret-0001", "qx2-refresh-token-secret-0001", "qx3-state-secret-0001-abcdefghijkl",
        "qx4-verifier-secret-0001-abcdefghijklmnopqrstuvwxyz", "qx5-device-code-secret-0001", "qx6-client-secret-0001-abcdef",
    ]

    private func dumped(_ value: Any) -> String {
        var text = ""
        dump(value, to: &text)
        return text + "\n" + String(reflecting: value) + "\n"
            + Mirror(reflecting: value).children.map { "\($0.value)" }.joined(separator: "\n")
    }

    private func expectNoSecret(_ value: Any, sourceLocation: SourceLocation = #_sourceLocation) {
        let text = dumped(value)
        for secret in Self.secrets {
            #expect(!text.contains(secret), "\(secret) in \(text)", sourceLocation: sourceLocation)
            // A token's redacted form may show 3 characters (documented); never 4.
            #expect(!text.contains(secret.prefix(4)), "more than 3 characters of \(secret) in \(text)", sourceLocation: sourceLocation)
        }
    }

    @Test func aSecretDumpsAsItsRedactedForm() {
        expectNoSecret(Secret(Self.secrets[0]))
        #expect(dumped(Secret(Self.secrets[0])).contains("(redacted)"))
    }

    @Test func anAccessTokenDumpsItsMetadataOnly() {
        let token = AccessToken(
            accessToken: Secret(Self.secrets[0]),
            refreshToken: Secret(Self.secrets[1]),
            scopes: ["read"],
            extraFields: ["id_token": .string(Self.secrets[4])]
        )
        expectNoSecret(token)
        expectNoSecret([token])
        #expect(dumped(token).contains("read"))
    }

    @Test func aPendingAuthorizationDumpsNeitherStateNorVerifierNorItsURL() throws {
        let pending = PendingAuthorization(
            url: try #require(URL(string: "https://idp.example/authorize?state=\(Self.secrets[2])")),
            state: Self.secrets[2],
            codeVerifier: Secret(Self.secrets[3]),
            redirectURI: try #require(URL(string: "https://app.example/callback")),
            scopes: ["read"],
            expectedIssuer: nil,
            requiresIssuer: false,
            createdAt: Date(timeIntervalSince1970: 0)
        )
        expectNoSecret(pending)
    }

    @Test func aDeviceAuthorizationDumpsNoDeviceCode() throws {
        let device = DeviceAuthorization(
            deviceCode: Secret(Self.secrets[4]),
            userCode: "ABCD-EFGH",
            verificationURI: try #require(URL(string: "https://idp.example/device")),
            verificationURIComplete: nil,
            expiresAt: Date(timeIntervalSince1970: 0),
            interval: .seconds(5)
        )
        expectNoSecret(device)
        #expect(dumped(device).contains("ABCD-EFGH"))
    }

    /// `HTTPFields` is swift-http-types', and its own description and dump
    /// show values; what the library prints of a request or a response, and
    /// `redactedDescription`, show names only.
    @Test func requestsAndResponsesDumpHeaderNamesOnly() {
        let headers: HTTPFields = [.authorization: "Bearer \(Self.secrets[0])", .accept: "application/json"]
        let request = HTTPTransportRequest(
            method: .post, url: URL(string: "https://api.example/me")!, headers: headers, body: Data(Self.secrets[1].utf8))
        let response = HTTPTransportResponse(status: 200, headers: headers, body: Data(Self.secrets[1].utf8))
        expectNoSecret(request)
        expectNoSecret(response)
        #expect(dumped(request).contains("Authorization"))
        #expect(dumped(response).contains("Authorization"))
        #expect(!headers.redactedDescription.contains(Self.secrets[0]))
        #expect(headers.redactedDescription == "HTTPFields(Authorization, Accept)")
    }

    @Test func aClientSecretShowsNoPrefixAtAll() throws {
        let configuration = try OAuth2Configuration(
            clientID: "client-1",
            clientSecret: Secret(Self.secrets[5]),
            tokenEndpoint: try #require(URL(string: "https://idp.example/token"))
        )
        #expect(configuration.clientSecret?.description == "(redacted)")
        expectNoSecret(configuration)
        #expect(!dumped(configuration).contains("qx6"))
        #expect(configuration.clientSecret?.value == Self.secrets[5])
    }

    @Test func anOpaqueSecretShowsNoPrefixAndEqualsItsPlainTwin() {
        let password = Secret.opaque(Self.secrets[5])
        #expect(password.description == "(redacted)")
        #expect(password == Secret(Self.secrets[5]))
        #expect(Secret(Self.secrets[5]).description.hasPrefix("qx6"), "a token shows its first characters")
    }
}
