import Foundation
import Testing
@testable import OAuth2

@Suite struct ClientIDMetadataDocumentTests {
    static let url = URL(string: "https://app.example/oauth/client.json")!
    static let metadata = ClientMetadata(redirectURIs: [URL(string: "http://127.0.0.1:8080/callback")!], clientName: "My App")

    @Test func theDocumentNamesItsOwnURLAsClientID() throws {
        let data = try ClientIDMetadataDocument(clientID: Self.url, metadata: Self.metadata).json()
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect(object["client_id"] as? String == "https://app.example/oauth/client.json")
        #expect(object["redirect_uris"] as? [String] == ["http://127.0.0.1:8080/callback"])
        #expect(object["client_name"] as? String == "My App")
        #expect(object["token_endpoint_auth_method"] as? String == "none")
        #expect(object["scope"] == nil)
        #expect(String(decoding: data, as: UTF8.self).contains("https://app.example/oauth/client.json"), "slashes are not escaped")
    }

    @Test func acceptsAnHTTPSURLWithAPathAndAPort() throws {
        for text in ["https://app.example/client", "https://app.example:8443/a/b.json", "https://127.0.0.1:9443/client.json?v=1"] {
            try ClientIDMetadataDocument.validate(clientID: URL(string: text)!)
        }
    }

    @Test func refusesWhatTheDraftForbidsInAClientIDURL() {
        for text in [
            "http://app.example/client.json", "https://app.example", "https://app.example/", "https://app.example/client#x",
            "https://user@app.example/client", "https://user:pw@app.example/client", "https://app.example/a/../client",
            "https://app.example/./client", "https://app.example/a/%2E%2E/client", "https://app.example/%2e", "custom:app/client",
        ] {
            let error = FlowFixtures.error { () throws(OAuth2Error) in try ClientIDMetadataDocument.validate(clientID: URL(string: text)!) }
            #expect(error?.code == .invalidConfiguration, "\(text)")
        }
    }

    @Test func refusesASharedSecretAuthenticationMethod() {
        var metadata = Self.metadata
        metadata.tokenEndpointAuthMethod = "client_secret_basic"
        let error = FlowFixtures.error { () throws(OAuth2Error) in try ClientIDMetadataDocument(clientID: Self.url, metadata: metadata) }
        #expect(error?.code == .invalidConfiguration)
    }
}
