import Foundation
import HTTPTypes
import OAuth2
import OAuth2Testing
import Testing

@testable import MCPClientCore

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite struct EndpointSecurityTests {
    func authorizer() throws -> ProtectedResourceAuthorizer {
        try ProtectedResourceAuthorizer(
            identity: ClientIdentity(clientID: "example"), redirectHandler: nil, store: InMemoryTokenStore(),
            transport: CannedTransport())
    }

    @Test(arguments: ["https://mcp.example/mcp", "http://127.0.0.1:8000/mcp", "http://localhost/mcp", "http://[::1]:3000/mcp"])
    func httpsAndLoopbackEndpointsAreAccepted(_ url: String) throws {
        try authorizer().validateEndpointSecurity(for: URL(string: url)!)
    }

    @Test(arguments: ["http://mcp.example/mcp", "http://10.0.0.1/mcp", "ftp://mcp.example/mcp"])
    func plainHTTPElsewhereIsRefused(_ url: String) throws {
        #expect(throws: OAuth2Error.self) { try authorizer().validateEndpointSecurity(for: URL(string: url)!) }
    }

    @Test func nothingIsSignedBeforeATokenIsHeld() throws {
        #expect(try authorizer().authorizationHeader(for: URL(string: "http://127.0.0.1:9/mcp")!) == nil)
    }
}

@Suite struct StepUpLimitTests {
    let endpoint = URL(string: "http://127.0.0.1:9/mcp")!

    /// The issue's hostile case through the SDK's seam: a resource that asks
    /// for more scope on every retry gets one step-up per request, then the
    /// library's typed error, carrying what it asked for, and nobody is sent
    /// to sign in again.
    @Test func aSecondStepUpForOneRequestIsRefusedWithoutAnotherSignIn() async throws {
        let network = CannedTransport()
        let authorizer = try ProtectedResourceAuthorizer(
            identity: ClientIdentity(clientID: "example"), redirectHandler: NoRedirect(), store: InMemoryTokenStore(),
            transport: network)
        authorizer.state.withLock { $0[endpoint.absoluteString] = .init(authorization: "Bearer held", stepUps: 1) }
        let headers = ["WWW-Authenticate": #"Bearer error="insufficient_scope", scope="read admin""#]

        await #expect(throws: OAuth2Error.self) {
            _ = try await authorizer.handleChallenge(
                statusCode: 403, headers: headers, endpoint: endpoint, operationKey: "tools/call", session: .shared)
        }
        let error = try #require(authorizer.lastError)
        #expect(error.code == .insufficientScope)
        #expect(error.stepUp?.scopes == ["read", "admin"])
        #expect(network.requests.isEmpty)
        #expect(authorizer.authorizationHeader(for: endpoint) == "Bearer held")
    }

    /// Each request the SDK starts may step up once again.
    @Test func theNextRequestMayStepUpAgain() async throws {
        let authorizer = try ProtectedResourceAuthorizer(
            identity: ClientIdentity(clientID: "example"), redirectHandler: NoRedirect(), store: InMemoryTokenStore(),
            transport: CannedTransport())
        authorizer.state.withLock { $0[endpoint.absoluteString] = .init(authorization: nil, signIns: 1, stepUps: 1) }
        try await authorizer.prepareAuthorization(for: endpoint, session: .shared)
        let state = authorizer.state.withLock { $0[endpoint.absoluteString] }
        #expect(state?.stepUps == 0)
        #expect(state?.signIns == 0)
    }
}

/// A redirect handler that fails the test when used.
struct NoRedirect: AuthorizationRedirectHandler {
    var redirectURI: URL { URL(string: "http://127.0.0.1/callback")! }
    func redirect(for pending: PendingAuthorization) async throws(OAuth2Error) -> URL {
        Issue.record("a sign-in was started")
        throw OAuth2Error(code: .invalidConfiguration, message: "no sign-in expected")
    }
}
