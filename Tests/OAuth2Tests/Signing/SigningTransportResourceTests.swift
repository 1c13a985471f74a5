import Foundation
import OAuth2
import OAuth2Testing
import Testing

/// ``SigningTransport`` and tokens obtained for one resource (RFC 8707,
/// ``TokenBinding/resource``): the audience rule, and what a refusal asks for.
@Suite struct SigningTransportResourceTests {
    private let resourceA = "https://mcp.example/a"
    private let resourceB = URL(string: "https://mcp.example/b/tools")!

    private func token(for resource: String?, scopes: [String] = ["read"]) -> AccessToken {
        AccessToken(
            accessToken: Secret("at-resource-0000000001"), scopes: scopes,
            binding: TokenBinding(tokenEndpoint: "https://auth.example/token", clientID: "c", resource: resource))
    }

    @Test func aTokenForOneResourceIsRefusedForAnotherBeforeAnythingIsSent() async throws {
        let inner = CannedTransport()
        let source = token(for: resourceA)
        let error = await oauth2Error {
            _ = try await SigningTransport(wrapping: inner, tokenSource: source).send(HTTPTransportRequest(url: resourceB))
        }
        #expect(error?.code == .resourceMismatch)
        #expect(inner.requests.isEmpty)
        #expect(error.map { !$0.message.contains("at-resource") } == true)
    }

    @Test func aTokenForAResourceGoesToItsURLs() async throws {
        let inner = CannedTransport()
        let url = URL(string: "https://mcp.example/a/tools?x=1")!
        inner.enqueue(HTTPTransportResponse(status: 200), for: url)
        let response = try await SigningTransport(wrapping: inner, tokenSource: token(for: resourceA)).send(HTTPTransportRequest(url: url))
        #expect(response.status == 200)
        #expect(inner.requests.first?.headers[.authorization] == "Bearer at-resource-0000000001")
    }

    @Test func aSameOriginRedirectOutsideTheResourceDoesNotCarryTheToken() async throws {
        let inner = CannedTransport()
        let url = URL(string: "https://mcp.example/a/tools")!
        inner.enqueue(HTTPTransportResponse(status: 302, headers: [.location: resourceB.absoluteString]), for: url)
        inner.enqueue(HTTPTransportResponse(status: 200), for: resourceB)
        _ = try await SigningTransport(wrapping: inner, tokenSource: token(for: resourceA)).send(HTTPTransportRequest(url: url))
        #expect(inner.requests.map { $0.headers[.authorization] } == ["Bearer at-resource-0000000001", nil])
    }

    @Test func aTokenWithoutAResourceGoesAnywhereAsBefore() async throws {
        let inner = CannedTransport()
        inner.enqueue(HTTPTransportResponse(status: 200), for: resourceB)
        let response = try await SigningTransport(wrapping: inner, tokenSource: token(for: nil)).send(HTTPTransportRequest(url: resourceB))
        #expect(response.status == 200)
    }

    @Test func insufficientScopeCarriesTheUnionOfTheTokensScopesAndTheAskedOnes() async throws {
        let inner = CannedTransport()
        let url = URL(string: "https://mcp.example/a")!
        inner.enqueue(
            HTTPTransportResponse(status: 403, headers: [.wwwAuthenticate: #"Bearer error="insufficient_scope", scope="write read""#]),
            for: url)
        let error = await oauth2Error {
            _ = try await SigningTransport(wrapping: inner, tokenSource: token(for: nil, scopes: ["read", "profile"])).send(
                HTTPTransportRequest(url: url))
        }
        #expect(error?.code == .insufficientScope)
        #expect(error?.stepUp == StepUpRequest(resource: nil, scopes: ["read", "profile", "write"]))
    }

    @Test func insufficientUserAuthenticationIsItsOwnErrorWithWhatTheResourceAsked() async throws {
        let inner = CannedTransport()
        let url = URL(string: "https://mcp.example/a")!
        inner.enqueue(
            HTTPTransportResponse(
                status: 401,
                headers: [.wwwAuthenticate: #"Bearer error="insufficient_user_authentication", acr_values="phr phrh", max_age=60"#]),
            for: url)
        let error = await oauth2Error {
            _ = try await SigningTransport(wrapping: inner, tokenSource: token(for: nil)).send(HTTPTransportRequest(url: url))
        }
        #expect(error?.code == .insufficientUserAuthentication)
        #expect(error?.stepUp == StepUpRequest(scopes: ["read"], acrValues: ["phr", "phrh"], maxAge: .seconds(60)))
        #expect(inner.requests.count == 1)
    }
}
