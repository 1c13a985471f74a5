import Foundation
import Testing
@testable import OAuth2

@Suite struct FormURLEncodingTests {
    private func decode(_ text: String) throws(FormURLEncoding.Failure) -> [(String, String)] {
        try FormURLEncoding.decode(text[...])
    }

    private func pairsEqual(_ lhs: [(String, String)], _ rhs: [(String, String)]) -> Bool {
        lhs.count == rhs.count && zip(lhs, rhs).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
    }

    @Test func keepsUnreservedCharactersAndEncodesTheRest() {
        #expect(FormURLEncoding.encodeComponent("azAZ09*-._") == "azAZ09*-._")
        #expect(FormURLEncoding.encodeComponent("a b") == "a+b")
        #expect(FormURLEncoding.encodeComponent("~!'()") == "%7E%21%27%28%29")
        #expect(FormURLEncoding.encodeComponent(":+/%&= ?#") == "%3A%2B%2F%25%26%3D+%3F%23")
        #expect(FormURLEncoding.encodeComponent("é€") == "%C3%A9%E2%82%AC")
    }

    @Test func encodesSpaceAsPercent20WhenAsked() {
        #expect(FormURLEncoding.encodeComponent("openid profile", spaceAsPlus: false) == "openid%20profile")
    }

    @Test func encodesTheRFC6749AppendixBExample() {
        // RFC 6749 Appendix B: " %&+£€" → "+%25%26%2B%C2%A3%E2%82%AC"
        #expect(FormURLEncoding.encodeComponent(" %&+£€") == "+%25%26%2B%C2%A3%E2%82%AC")
        #expect(FormURLEncoding.encode([("parameter", " %&+£€")]) == "parameter=+%25%26%2B%C2%A3%E2%82%AC")
    }

    @Test func decodesTheRFC6749AppendixBExample() throws {
        let pairs = try decode("parameter=+%25%26%2B%C2%A3%E2%82%AC")
        #expect(pairs.count == 1)
        #expect(pairs.first?.0 == "parameter")
        #expect(pairs.first?.1 == " %&+£€")
    }

    @Test func encodesPairsInOrder() {
        #expect(
            FormURLEncoding.encode([("grant_type", "authorization_code"), ("code", "a b"), ("x", "")])
                == "grant_type=authorization_code&code=a+b&x=")
        #expect(FormURLEncoding.encode([]) == "")
    }

    @Test func roundTripsArbitraryText() throws {
        let samples: [(String, String)] = [
            ("redirect_uri", "https://app.example.com/cb?x=1&y=2#frag"),
            ("weird name=&", "value with spaces, plus+signs and %41"),
            ("unicode", "日本語 😀 é"),
            ("empty", ""),
            ("crlf", "a\r\nb"),
        ]
        let decoded = try decode(FormURLEncoding.encode(samples))
        #expect(pairsEqual(decoded, samples))
    }

    @Test func decodesPlusAsSpaceAndPercentEscapesInEitherCase() throws {
        #expect(pairsEqual(try decode("a=x+y%2b%2Bz%c3%a9"), [("a", "x y++zé")]))
    }

    @Test func skipsEmptyPiecesAndReadsABareNameAsEmptyValue() throws {
        #expect(pairsEqual(try decode("&&a=1&&b&c=&=d&"), [("a", "1"), ("b", ""), ("c", ""), ("", "d")]))
        #expect(try decode("").isEmpty)
    }

    @Test func splitsAtTheFirstEqualsSign() throws {
        #expect(pairsEqual(try decode("a=b=c"), [("a", "b=c")]))
    }

    @Test func keepsRepeatedNames() throws {
        #expect(pairsEqual(try decode("a=1&a=2"), [("a", "1"), ("a", "2")]))
    }

    @Test func refusesMalformedPercentEscapes() {
        for text in ["a=%", "a=%4", "a=%G1", "a=%4G", "a%=1", "a=100%", "a=%%41"] {
            #expect(throws: FormURLEncoding.Failure.self, "\(text)") { try decode(text) }
        }
    }

    @Test func refusesPercentEscapesThatAreNotUTF8() {
        for text in ["a=%FF", "a=%C3", "a=%C0%AF", "a=%ED%A0%80", "%80=1"] {
            #expect(throws: FormURLEncoding.Failure.self, "\(text)") { try decode(text) }
        }
    }
}
