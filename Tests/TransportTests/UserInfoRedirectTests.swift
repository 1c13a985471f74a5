import Foundation
import OAuth2
import Testing

extension CurlTransportTests {
    /// The userinfo endpoint is a provider document: an answer from wherever
    /// a redirect leads is not the provider's.
    @Suite struct UserInfoRedirects {
        @Test func aUserinfoEndpointAnsweringWithARedirectFailsWithUnexpectedRedirect() async throws {
            let server = try currentServer()
            let configuration = try OAuth2Configuration(
                clientID: "app",
                tokenEndpoint: try server.url("/token"),
                issuer: "https://id.example",
                openID: OpenIDSettings(
                    jwksURI: try #require(URL(string: "https://id.example/jwks")),
                    userinfoEndpoint: try server.url("/redirect?to=/echo/elsewhere"))
            )
            let store = InMemoryTokenStore()
            try await store.save(
                AccessToken(accessToken: Secret("at-userinfo"), expiresAt: Date().addingTimeInterval(3600)), account: "default")
            let error = try await withTransport { transport in
                let client = try OAuth2Provider(configuration: configuration, store: store, transport: transport).client()
                do {
                    _ = try await client.userInfo()
                    return nil as OAuth2Error?
                } catch let error as OAuth2Error {
                    return error
                }
            }
            #expect(error?.code == .unexpectedRedirect, "\(String(describing: error))")
            #expect(error?.httpStatus == 302)
        }
    }
}
