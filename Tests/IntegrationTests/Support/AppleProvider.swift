import Foundation
import OAuth2

/// The provider that behaves as Sign in with Apple does (Tests/AppleProvider),
/// read from the env.json `scripts/apple-provider.sh start` wrote.
///
/// `make test` starts two and passes their env.json paths:
/// - `OAUTH2_IT_APPLE_PROVIDER`: `email_verified` and `is_private_email` as
///   the strings "true"/"false", as Apple has long sent them;
/// - `OAUTH2_IT_APPLE_BOOLEAN_PROVIDER`: the same claims as JSON booleans.
struct AppleProvider: Decodable, Sendable {
    struct Endpoints: Decodable, Sendable {
        let metadata: String
        let authorize: String
        let token: String
        let revoke: String
        let jwks: String
        let secrets: String
    }

    let name: String
    let issuer: String
    let endpoints: Endpoints
    let clientID: String
    let teamID: String
    let keyID: String
    let keyFile: String
    let redirectURI: String
    let booleanClaims: Bool

    enum CodingKeys: String, CodingKey {
        case name, issuer, endpoints
        case clientID = "client_id"
        case teamID = "team_id"
        case keyID = "key_id"
        case keyFile = "key_file"
        case redirectURI = "redirect_uri"
        case booleanClaims = "boolean_claims"
    }

    static let isConfigured = !(ProcessInfo.processInfo.environment["OAUTH2_IT_APPLE_PROVIDER"] ?? "").isEmpty
    static let booleanIsConfigured = !(ProcessInfo.processInfo.environment["OAUTH2_IT_APPLE_BOOLEAN_PROVIDER"] ?? "").isEmpty

    /// The provider with string booleans (`OAUTH2_IT_APPLE_PROVIDER`).
    static func strings() throws -> AppleProvider { try load("OAUTH2_IT_APPLE_PROVIDER") }
    /// The provider with JSON booleans (`OAUTH2_IT_APPLE_BOOLEAN_PROVIDER`).
    static func booleans() throws -> AppleProvider { try load("OAUTH2_IT_APPLE_BOOLEAN_PROVIDER") }

    private static func load(_ variable: String) throws -> AppleProvider {
        guard let path = ProcessInfo.processInfo.environment[variable], !path.isEmpty else {
            throw ProviderError(description: "\(variable) is not set")
        }
        do {
            return try JSONDecoder().decode(AppleProvider.self, from: Data(contentsOf: URL(fileURLWithPath: path)))
        } catch {
            throw ProviderError(description: "\(variable)=\(path) cannot be read as the Apple provider's env.json: \(error)")
        }
    }

    /// The app's `.p8` key, as Apple's developer site hands it out.
    func privateKeyPEM() throws -> String {
        try String(contentsOfFile: keyFile, encoding: .utf8)
    }

    /// The library's Sign in with Apple configuration, pointed at this server.
    func configuration(teamID: String? = nil, keyID: String? = nil, privateKeyPEM: String? = nil) throws -> OAuth2Configuration {
        try OAuth2Configuration.signInWithApple(
            clientID: clientID, teamID: teamID ?? self.teamID, keyID: keyID ?? self.keyID,
            privateKeyPEM: try privateKeyPEM ?? self.privateKeyPEM(), server: URL(string: issuer)!)
    }

    /// What the user's browser does at the authorize URL: loads the page and
    /// returns where its form posts to and the form's body, as a browser
    /// would encode it (application/x-www-form-urlencoded).
    func browse(_ url: URL, transport: CurlTransport) async throws -> (action: String, body: String) {
        let response = try await transport.send(HTTPTransportRequest(url: url))
        let page = String(decoding: response.body, as: UTF8.self)
        guard response.status.code == 200 else {
            throw ProviderError(description: "the authorize page answered \(response.status.code): \(page.prefix(300))")
        }
        return try Self.form(in: page)
    }

    /// The action and encoded fields of the page's one form.
    static func form(in page: String) throws -> (action: String, body: String) {
        guard let action = firstMatch(#"<form method="post" action="([^"]*)""#, in: page) else {
            throw ProviderError(description: "the page has no form: \(page.prefix(300))")
        }
        let inputs = matches(#"<input type="hidden" name="([^"]*)" value="([^"]*)">"#, in: page)
        let body = inputs.map { "\(formEncode(unescape($0[0])))=\(formEncode(unescape($0[1])))" }.joined(separator: "&")
        return (unescape(action), body)
    }

    /// A browser's application/x-www-form-urlencoded: unreserved bytes as
    /// they are, a space as `+`, every other byte `%XX`.
    static func formEncode(_ text: String) -> String {
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
            .replacingOccurrences(of: "&lt;", with: "<").replacingOccurrences(of: "&gt;", with: ">")
            .replacingOccurrences(of: "&amp;", with: "&")
    }

    private static func firstMatch(_ pattern: String, in text: String) -> String? {
        matches(pattern, in: text).first?.first
    }

    private static func matches(_ pattern: String, in text: String) -> [[String]] {
        guard let regex = try? NSRegularExpression(pattern: pattern) else { return [] }
        let range = NSRange(text.startIndex..., in: text)
        return regex.matches(in: text, range: range).map { match in
            (1..<match.numberOfRanges).compactMap { Range(match.range(at: $0), in: text).map { String(text[$0]) } }
        }
    }
}
