#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// How the client authenticates to the token endpoint (RFC 6749 §2.3.1).
public struct ClientAuthentication: Sendable, Hashable, Codable, CustomStringConvertible {
    enum Method: String, Sendable, Hashable, Codable {
        case clientSecretBasic = "client_secret_basic"
        case clientSecretPost = "client_secret_post"
        case none
    }

    let method: Method

    /// `Authorization: Basic` with the id and secret each form-urlencoded before base64. The default.
    public static let clientSecretBasic = ClientAuthentication(method: .clientSecretBasic)
    /// `client_id` and `client_secret` in the form body.
    public static let clientSecretPost = ClientAuthentication(method: .clientSecretPost)
    /// A public client: `client_id` in the body, no secret, no Basic header.
    public static let none = ClientAuthentication(method: .none)

    /// The RFC 8414 name: `client_secret_basic`, `client_secret_post` or `none`.
    public var description: String { method.rawValue }

    /// The method of that RFC 8414 name, or `nil` for an unknown one.
    public init?(name: String) {
        guard let method = Method(rawValue: name) else { return nil }
        self.method = method
    }

    init(method: Method) {
        self.method = method
    }
}
