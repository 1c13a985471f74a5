import Foundation
import OAuth2
import Testing

@Suite struct OAuth2GrantTests {
    static let secrets = ["code-secret-1234", "pw-123456789", "assertion-value", "device-code-secret"]

    static func grants() throws -> [(OAuth2Grant, String)] {
        let device = DeviceAuthorization(
            deviceCode: Secret("device-code-secret"), userCode: "ABCD-EFGH",
            verificationURI: try #require(URL(string: "https://idp.example/device")), expiresAt: Date())
        return [
            (.authorizationCode(redirect: "https://app.example/callback?code=code-secret-1234&state=s"), "authorization_code"),
            (.password(username: "alice", password: Secret("pw-123456789")), "password"),
            (.clientCredentials, "client_credentials"),
            (.assertion, "assertion"),
            (.assertion(type: TokenGrant.jwtBearerType, assertion: Secret("eyJ.assertion-value.sig")), TokenGrant.jwtBearerType),
            (.deviceCode(device), "urn:ietf:params:oauth:grant-type:device_code"),
        ]
    }

    @Test func aGrantDescribesItsTypeAndNoSecret() throws {
        for (grant, type) in try Self.grants() {
            #expect(grant.description == "OAuth2Grant(\(type))")
            #expect(String(reflecting: grant) == "OAuth2Grant(\(type))")
        }
    }

    @Test func aGrantDumpedShowsNoSecret() throws {
        for (grant, _) in try Self.grants() {
            var dumped = ""
            dump(grant, to: &dumped)
            for secret in Self.secrets {
                #expect(!dumped.contains(secret), "\(secret) in \(dumped)")
            }
        }
    }
}
