#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// An assertion grant (RFC 7521) whose assertions the app makes on demand,
/// such as a JWT-bearer grant (RFC 7523) signed by a service key.
///
/// With one in the configuration, `client.authenticate(.assertion)`
/// (``OAuth2Client/authenticate(_:)``) gets a token, and the client gets the next one by itself when that token
/// expires or is rejected: no refresh token is needed. `makeAssertion` is
/// called once per token request, never while a lock of the client is held;
/// the assertion is sent once and never logged.
public struct AssertionGrant: Sendable {
    /// The `grant_type`, an absolute URI (`urn:ietf:params:oauth:grant-type:jwt-bearer`).
    public var type: String
    /// Makes a fresh assertion; throwing fails the token request with `invalid_configuration`.
    public var makeAssertion: @Sendable () async throws -> Secret

    /// An assertion grant of `type`.
    public init(type: String, makeAssertion: @escaping @Sendable () async throws -> Secret) {
        self.type = type
        self.makeAssertion = makeAssertion
    }

    /// The JWT-bearer grant (RFC 7523 §2.1).
    public static func jwtBearer(_ makeAssertion: @escaping @Sendable () async throws -> Secret) -> AssertionGrant {
        AssertionGrant(type: TokenGrant.jwtBearerType, makeAssertion: makeAssertion)
    }
}
