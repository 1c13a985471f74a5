import Foundation
import HTTPTypes
import OAuth2
import OAuth2OpenAPI
import OAuth2Testing
import OpenAPIRuntime
import Testing

/// ``OAuth2Middleware`` with DPoP-bound tokens: the same proofs, nonces and
/// challenges as ``SigningTransport`` itself, through a generated client.
struct OAuth2MiddlewareDPoPTests {
    let server = URL(string: "https://api.example/v1")!
    let canned = CannedTransport()
    let key: DPoPKey
    static let proofField = HTTPField.Name("DPoP")!
    static let nonceField = HTTPField.Name("DPoP-Nonce")!

    init() throws {
        key = try DPoPKey.generate()
    }

    private func client(_ source: any TokenSource) -> Client {
        Client(
            serverURL: server,
            transport: HTTPTransportClientTransport(canned),
            middlewares: [OAuth2Middleware(tokenSource: source, serverURL: server)]
        )
    }

    private func claims(_ request: HTTPTransportRequest) throws -> [String: JSONValue] {
        try CompactJWS(try #require(request.headers[Self.proofField])).payloadObject()
    }

    private func code(_ error: (any Error)?) -> OAuth2Error.Code? {
        ((error as? ClientError)?.underlyingError as? OAuth2Error)?.code
    }

    private var useNonce: HTTPTransportResponse {
        HTTPTransportResponse(
            status: 401, headers: [.wwwAuthenticate: #"DPoP error="use_dpop_nonce""#, Self.nonceField: "n-1"])
    }

    @Test func aBoundTokenGoesAsDPoPWithAProofOfTheRequestsOwnMethodAndURL() async throws {
        canned.enqueue(json: #"{"username": "alice", "scope": "read"}"#)

        _ = try await client(ScriptedTokenSource(bound: key, "first")).getMe().ok.body.json

        let sent = try #require(canned.requests.first)
        #expect(sent.headers[values: .authorization] == ["DPoP first"])
        let claims = try claims(sent)
        #expect(claims["htm"]?.stringValue == "GET")
        #expect(claims["htu"]?.stringValue == "https://api.example/v1/api/me")
        #expect(claims["ath"] != nil)
    }

    // Before: each request made a signing transport with a cache of its own,
    // so every request paid the use_dpop_nonce round trip again.
    @Test func aNonceIsAnsweredOnceAndKeptForTheNextRequests() async throws {
        let client = client(ScriptedTokenSource(bound: key, "first"))
        canned.enqueue(useNonce)
        canned.enqueue(json: #"{"username": "alice", "scope": "read"}"#)
        canned.enqueue(json: #"{"username": "alice", "scope": "read"}"#)

        _ = try await client.getMe().ok.body.json
        _ = try await client.getMe().ok.body.json

        let nonces = try canned.requests.map { try claims($0)["nonce"]?.stringValue }
        #expect(nonces == [nil, "n-1", "n-1"])
        let jtis = try canned.requests.compactMap { try claims($0)["jti"]?.stringValue }
        #expect(Set(jtis).count == 3)
    }

    @Test func aServerThatKeepsAskingForANonceIsTheNonceLoopError() async throws {
        canned.enqueue(useNonce)
        canned.enqueue(useNonce)
        canned.enqueue(json: #"{"username": "never asked for", "scope": "read"}"#)

        let error = await #expect(throws: ClientError.self) { _ = try await client(ScriptedTokenSource(bound: key, "first")).getMe() }

        #expect(code(error) == .dpopNonceLoop)
        #expect(canned.requests.count == 2)
    }

    @Test func aBearerTokenAnsweredWithADPoPOnlyChallengeIsDPoPRequired() async throws {
        let source = ScriptedTokenSource("first", "second")
        canned.enqueue(HTTPTransportResponse(status: 401, headers: [.wwwAuthenticate: #"DPoP algs="ES256""#]))

        let error = await #expect(throws: ClientError.self) { _ = try await client(source).getMe() }

        #expect(code(error) == .dpopRequired)
        #expect(source.replacements == 0)
        #expect(canned.requests.first?.headers[Self.proofField] == nil)
    }
}
