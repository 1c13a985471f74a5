import Foundation
import OAuth2

/// The provider that behaves as Sign in with Apple documents
/// (Tests/AppleProvider in the framework), as its env.json describes it;
/// found through `OAUTH2_IT_APPLE_PROVIDER`, which `make test` sets.
struct AppleEnvironment: Decodable, Sendable {
    let issuer: String
    let clientID: String
    let teamID: String
    let keyID: String
    let keyFile: String

    enum CodingKeys: String, CodingKey {
        case issuer
        case clientID = "client_id"
        case teamID = "team_id"
        case keyID = "key_id"
        case keyFile = "key_file"
    }

    static let isConfigured = !(ProcessInfo.processInfo.environment["OAUTH2_IT_APPLE_PROVIDER"] ?? "").isEmpty

    static func load() throws -> AppleEnvironment {
        let path = try requireValue(ProcessInfo.processInfo.environment["OAUTH2_IT_APPLE_PROVIDER"], "OAUTH2_IT_APPLE_PROVIDER is not set")
        return try JSONDecoder().decode(AppleEnvironment.self, from: Data(contentsOf: URL(fileURLWithPath: path)))
    }

    /// The app's variables for Sign in with Apple, as an operator sets them.
    var environment: [String: String] {
        [
            "SIGNIN_APPLE_CLIENT_ID": clientID, "SIGNIN_APPLE_TEAM_ID": teamID, "SIGNIN_APPLE_KEY_ID": keyID,
            "SIGNIN_APPLE_KEY_FILE": keyFile, "SIGNIN_APPLE_SERVER": issuer,
        ]
    }

    /// What the user's browser gets at Apple's authorize URL: the auto-posting
    /// form's action and its body, encoded as a browser encodes a form.
    func authorize(_ url: String) async throws -> (action: String, body: String) {
        let response = try await TestBrowser.transport.send(HTTPTransportRequest(url: try requireValue(URL(string: url), "bad URL")))
        let page = response.bodyText
        guard response.status == 200 else { throw TestFailure("Apple's authorize page answered \(response.status): \(page.prefix(200))") }
        return try Self.form(in: page)
    }

    /// The action and the fields of a page's one form, encoded as a browser does.
    static func form(in page: String) throws -> (action: String, body: String) {
        let action = try requireValue(
            matches(#"<form method="post" action="([^"]*)""#, in: page).first?.first, "no form: \(page.prefix(200))")
        let inputs = matches(#"<input type="hidden" name="([^"]*)" value="([^"]*)">"#, in: page)
        let body = inputs.map { "\(encode(unescape($0[0])))=\(encode(unescape($0[1])))" }.joined(separator: "&")
        return (unescape(action), body)
    }

    private static func encode(_ text: String) -> String {
        var output = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "*"):
                output.unicodeScalars.append(Unicode.Scalar(byte))
            case UInt8(ascii: " "): output += "+"
            default: output += String(format: "%%%02X", byte)
            }
        }
        return output
    }

    private static func unescape(_ text: String) -> String {
        text.replacingOccurrences(of: "&quot;", with: "\"").replacingOccurrences(of: "&#x27;", with: "'")
            .replacingOccurrences(of: "&#39;", with: "'").replacingOccurrences(of: "&lt;", with: "<")
            .replacingOccurrences(of: "&gt;", with: ">").replacingOccurrences(of: "&amp;", with: "&")
    }

    private static func matches(_ pattern: String, in text: String) -> [[String]] {
        guard let regex = try? NSRegularExpression(pattern: pattern) else { return [] }
        return regex.matches(in: text, range: NSRange(text.startIndex..., in: text)).map { match in
            (1..<match.numberOfRanges).compactMap { Range(match.range(at: $0), in: text).map { String(text[$0]) } }
        }
    }
}
