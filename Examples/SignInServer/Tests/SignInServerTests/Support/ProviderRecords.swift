import Foundation
import OAuth2

/// What the provider itself recorded at its token endpoint (its
/// `/test/token-requests`, Tests/Provider/README.md): a client cannot show
/// how many requests it made, the provider can.
extension ProviderEnvironment {
    struct TokenRequest: Decodable, Sendable {
        let grantType: String?
        let status: Int

        enum CodingKeys: String, CodingKey {
            case grantType = "grant_type"
            case status
        }
    }

    /// Every token request of one of the provider's clients since it started, in order.
    func tokenRequests(client name: String) async throws -> [TokenRequest] {
        struct Records: Decodable { let requests: [TokenRequest] }
        let clientID = try requireValue(clients[name], "the provider has no \(name) client").clientID
        let query = clientID.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? clientID
        let url = try requireValue(URL(string: endpoints.testTokenRequests.absoluteString + "?client_id=" + query), "bad URL")
        let response = try await TestBrowser.transport.send(HTTPTransportRequest(url: url))
        guard response.status == 200 else { throw TestFailure("\(url.path) answered \(response.status)") }
        return try JSONDecoder().decode(Records.self, from: response.body).requests
    }

    /// How many `grantType` requests of a client the provider has recorded, whatever their answer.
    func tokenRequestCount(client name: String, grantType: String) async throws -> Int {
        try await tokenRequests(client: name).filter { $0.grantType == grantType }.count
    }
}
