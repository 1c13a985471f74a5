import ArgumentParser
import OAuth2

/// A value of `--auth-method`: the library's ``ClientAuthentication`` by its
/// RFC 8414 name, or `basic` and `post`, the short names people type.
///
/// A typed option, so the parser refuses a wrong value before anything runs,
/// and help and shell completion list the names. The same names are read
/// from `OAUTH2_AUTH_METHOD` and a saved provider (``init(name:)``).
struct AuthMethod: ExpressibleByArgument, Equatable, Sendable {
    /// The method.
    let authentication: ClientAuthentication
    /// The name as given, which `oauth2 provider add` saves.
    let name: String

    /// Every name accepted, in the order help shows them.
    static let names = [
        "basic", "post", "client_secret_basic", "client_secret_post", "client_secret_jwt", "private_key_jwt", "tls_client_auth",
        "self_signed_tls_client_auth", "none",
    ]

    /// The method of `name`, or `nil` when it is none of ``names``.
    init?(name: String) {
        switch name {
        case "basic": authentication = .clientSecretBasic
        case "post": authentication = .clientSecretPost
        default:
            guard let named = ClientAuthentication(name: name) else { return nil }
            authentication = named
        }
        self.name = name
    }

    init?(argument: String) {
        self.init(name: argument)
    }

    static var allValueStrings: [String] { names }

    static var defaultCompletionKind: CompletionKind { .list(names) }

    /// The names for a message: "basic, post, …, private_key_jwt or none".
    static var namesInWords: String {
        names.dropLast().joined(separator: ", ") + " or " + names[names.count - 1]
    }
}
