import Foundation
import Testing
import OAuth2

/// "Authenticating users with Sign in with Apple": `email_verified` and
/// `is_private_email` come as the strings "true"/"false" or as booleans.
@Suite struct IDTokenBooleanClaimsTests {
    static func token(_ extra: [String: JSONValue]) throws -> IDToken {
        var claims: [String: JSONValue] = [
            "iss": .string("https://appleid.apple.com"), "sub": .string("001234.abc.0123"), "aud": .string("com.example.web"),
            "iat": .number(1_700_000_000), "exp": .number(1_700_000_600),
        ]
        claims.merge(extra) { $1 }
        return try IDToken(claims: claims)
    }

    @Test func stringsAndBooleansReadAlike() throws {
        for (value, expected) in [(JSONValue.string("true"), true), (.string("false"), false), (.bool(true), true), (.bool(false), false)] {
            let token = try Self.token(["email_verified": value, "is_private_email": value])
            #expect(token.emailVerified == expected)
            #expect(token.isPrivateEmail == expected)
            #expect(token.booleanClaim("is_private_email") == expected)
        }
    }

    @Test func anythingElseIsUnknown() throws {
        for value in [JSONValue.string("TRUE"), .string("1"), .number(1), .null, .string("")] {
            #expect(try Self.token(["is_private_email": value]).isPrivateEmail == nil)
        }
        #expect(try Self.token([:]).isPrivateEmail == nil)
        #expect(try Self.token([:]).booleanClaim("email_verified") == nil)
    }
}
