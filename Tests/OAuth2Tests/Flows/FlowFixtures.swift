import Foundation
import Testing
@testable import OAuth2

/// Configurations and responses shared by the flow and parser tests.
enum FlowFixtures {
    static let tokenEndpoint = URL(string: "https://id.example.com/oauth/token")!
    static let authorizationEndpoint = URL(string: "https://id.example.com/oauth/authorize")!
    static let revocationEndpoint = URL(string: "https://id.example.com/oauth/revoke")!
    static let deviceEndpoint = URL(string: "https://id.example.com/oauth/device")!
    static let redirectURI = URL(string: "https://app.example.com/callback")!
    static let requestedAt = Date(timeIntervalSince1970: 1_700_000_000)

    static func configuration(
        clientSecret: Secret? = Secret("client-secret-value"),
        clientAuthentication: ClientAuthentication? = nil,
        authorizationEndpoint: URL? = FlowFixtures.authorizationEndpoint,
        issuer: String? = nil,
        requiresIssuer: Bool = false
    ) throws -> OAuth2Configuration {
        try OAuth2Configuration(
            clientID: "client-id",
            clientSecret: clientSecret,
            authorizationEndpoint: authorizationEndpoint,
            tokenEndpoint: tokenEndpoint,
            revocationEndpoint: revocationEndpoint,
            deviceAuthorizationEndpoint: deviceEndpoint,
            clientAuthentication: clientAuthentication,
            issuer: issuer,
            requiresIssuerInRedirect: requiresIssuer
        )
    }

    static func json(
        _ body: String, status: HTTPResponse.Status = 200, contentType: String? = "application/json", headers: [(String, String)] = []
    )
        -> HTTPTransportResponse
    {
        var fields = headers
        if let contentType { fields.append(("Content-Type", contentType)) }
        return HTTPTransportResponse(
            status: status,
            headers: HTTPFields(fields.compactMap { name, value in HTTPField.Name(name).map { HTTPField(name: $0, value: value) } }),
            body: Data(body.utf8))
    }

    /// Runs `body` and returns the OAuth2Error it throws, recording an issue when it throws none.
    static func error<T>(_ body: () throws(OAuth2Error) -> T, sourceLocation: SourceLocation = #_sourceLocation) -> OAuth2Error? {
        do {
            _ = try body()
            Issue.record("expected an OAuth2Error", sourceLocation: sourceLocation)
            return nil
        } catch {
            return error
        }
    }
}
