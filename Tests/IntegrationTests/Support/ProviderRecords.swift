import Foundation
import OAuth2

/// What the provider itself recorded (its `/test/*` endpoints, Tests/Provider/README.md):
/// the token requests it answered and whether a user's grant is alive.
extension Provider {
    /// One token-endpoint request as the provider saw it.
    struct TokenRequest: Decodable, Sendable {
        let grantType: String?
        let status: Int
        let error: String?

        enum CodingKeys: String, CodingKey {
            case grantType = "grant_type"
            case status, error
        }
    }

    private struct TokenRequests: Decodable {
        let requests: [TokenRequest]
        let delaying: Int
    }

    /// Every token request of a client of this run, in order, and whether an answer is being held.
    func tokenRequests(client name: String) async throws -> (requests: [TokenRequest], delaying: Int) {
        let clientID = try client(name).clientID
        let url =
            endpoints.testTokenRequests + "?client_id="
            + (clientID.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? clientID)
        let decoded = try JSONDecoder().decode(TokenRequests.self, from: try await Self.get(url))
        return (decoded.requests, decoded.delaying)
    }

    /// How many `grant_type` requests of a client the provider answered with 200.
    func successfulTokenRequests(client name: String, grantType: String) async throws -> Int {
        try await tokenRequests(client: name).requests.filter { $0.grantType == grantType && $0.status == 200 }.count
    }

    /// The refresh tokens of `username`'s grants to a client that are not revoked.
    func liveRefreshTokens(client name: String, username: String = "alice") async throws -> Int {
        try await liveRefreshTokens(clientID: try client(name).clientID, username: username)
    }

    /// The refresh tokens of `username`'s grants to the client `clientID` (one registered by a test, say) that are not revoked.
    func liveRefreshTokens(clientID: String, username: String = "alice") async throws -> Int {
        let query = clientID.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? clientID
        let url = endpoints.testGrants + "?client_id=" + query + "&username=" + username
        return try JSONObject(String(decoding: try await Self.get(url), as: UTF8.self))["live_refresh_tokens"] as? Int ?? -1
    }

    /// Holds the provider's next 200 token response `seconds` after it committed the token.
    func delayNextTokenResponse(seconds: Double) async throws {
        try await Self.post(endpoints.testDelayNextTokenResponse, form: "seconds=\(seconds)", doing: "arming the delay")
    }

    /// Ends an access token's life at the provider now, leaving its refresh
    /// token usable: the resource server rejects it while the client still
    /// believes it fresh.
    func expireAccessToken(_ token: Secret) async throws {
        let value = token.value.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
        try await Self.post(endpoints.testExpireAccessToken, form: "token=\(value)", doing: "expiring the access token")
    }

    /// Makes the key set (JWKS) endpoint answer `status` (503, 500) from now on; 0 ends the outage.
    func setJWKSOutage(status: Int) async throws {
        try await Self.post(endpoints.testJWKSOutage, form: "status=\(status)", doing: "setting the key set's outage")
    }

    /// How many requests for `path` the provider's log shows (its request log: method, path, status).
    func loggedRequests(to path: String) throws -> Int {
        let log = try String(contentsOfFile: runDir + "/server.log", encoding: .utf8)
        return log.components(separatedBy: "\n").filter { $0.contains(" \(path) HTTP/") || $0.contains(" \(path)?") }.count
    }

    private static func get(_ url: String) async throws -> Data {
        let response = try await send(HTTPTransportRequest(url: try Self.url(url)))
        guard response.status == 200 else { throw ProviderError(description: "\(url) answered \(response.status)") }
        return response.body
    }

    /// POSTs a form to one of the provider's test endpoints, which must answer 200.
    private static func post(_ url: String, form: String, doing what: String) async throws {
        var request = HTTPTransportRequest(method: .post, url: try Self.url(url))
        request.headers.append(HTTPField(name: .contentType, value: "application/x-www-form-urlencoded"))
        request.body = Data(form.utf8)
        let response = try await send(request)
        guard response.status == 200 else { throw ProviderError(description: "\(what) answered \(response.status)") }
    }

    private static func url(_ text: String) throws -> URL {
        guard let url = URL(string: text) else { throw ProviderError(description: "not a URL: \(text)") }
        return url
    }

    static func send(_ request: HTTPTransportRequest) async throws -> HTTPTransportResponse {
        let transport = CurlTransport()
        do {
            let response = try await transport.send(request)
            await transport.shutdown()
            return response
        } catch {
            await transport.shutdown()
            throw error
        }
    }
}
