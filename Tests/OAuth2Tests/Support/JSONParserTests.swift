import Foundation
import Testing
@testable import OAuth2

@Suite struct JSONParserTests {
    private func parse(_ text: String, maxDepth: Int = 64) throws(JSONParser.Failure) -> JSONValue {
        try JSONParser.parse(Data(text.utf8), maxDepth: maxDepth)
    }

    private func parses(_ text: String) -> Bool {
        (try? parse(text)) != nil
    }

    @Test func parsesTheRFC8259ObjectExample() throws {
        let text = """
            {
              "Image": {
                  "Width":  800,
                  "Height": 600,
                  "Title":  "View from 15th Floor",
                  "Thumbnail": {
                      "Url":    "http://www.example.com/image/481989943",
                      "Height": 125,
                      "Width":  100
                  },
                  "Animated" : false,
                  "IDs": [116, 943, 234, 38793]
                }
            }
            """
        let value = try parse(text)
        guard case .object(let root) = value, case .object(let image)? = root["Image"] else {
            Issue.record("not an object")
            return
        }
        #expect(image["Width"] == .number(800))
        #expect(image["Title"] == .string("View from 15th Floor"))
        #expect(image["Animated"] == .bool(false))
        #expect(image["IDs"] == .array([.number(116), .number(943), .number(234), .number(38793)]))
        guard case .object(let thumbnail)? = image["Thumbnail"] else {
            Issue.record("no thumbnail")
            return
        }
        #expect(thumbnail["Url"] == .string("http://www.example.com/image/481989943"))
    }

    @Test func skipsAByteOrderMarkAtTheVeryStartOnly() throws {
        #expect(try parse("\u{FEFF}{\"a\":1}") == .object(["a": .number(1)]))
        #expect(!parses(" \u{FEFF}{\"a\":1}"), "not after whitespace")
        #expect(!parses("{\"a\":\u{FEFF}1}"), "not inside")
        #expect(!parses("\u{FEFF}\u{FEFF}{}"), "only one")
        #expect(!parses("\u{FEFF}"), "a mark alone is no document")
    }

    @Test func parsesTheRFC8259ArrayExample() throws {
        let text = """
            [
              {"precision": "zip", "Latitude": 37.7668, "Longitude": -122.3959, "Address": "",
               "City": "SAN FRANCISCO", "State": "CA", "Zip": "94107", "Country": "US"},
              {"precision": "zip", "Latitude": 37.371991, "Longitude": -122.026020, "Address": "",
               "City": "SUNNYVALE", "State": "CA", "Zip": "94085", "Country": "US"}
            ]
            """
        guard case .array(let items) = try parse(text), items.count == 2, case .object(let first) = items[0] else {
            Issue.record("not an array of two objects")
            return
        }
        #expect(first["Latitude"] == .number(37.7668))
        #expect(first["Longitude"] == .number(-122.3959))
        #expect(first["Address"] == .string(""))
    }

    @Test func parsesTheRFC8259ScalarExamples() throws {
        #expect(try parse("\"Hello world!\"") == .string("Hello world!"))
        #expect(try parse("42") == .number(42))
        #expect(try parse("true") == .bool(true))
        #expect(try parse("null") == .null)
        #expect(try parse(" \t\r\n false \n") == .bool(false))
    }

    @Test func decodesEverySimpleEscape() throws {
        #expect(try parse(#""\"\\\/\b\f\n\r\t""#) == .string("\"\\/\u{08}\u{0C}\n\r\t"))
    }

    @Test func decodesUnicodeEscapesAndRawUTF8() throws {
        #expect(try parse(#""caf\u00e9 \u00E9 é \u20AC""#) == .string("café é é €"))
        #expect(try parse(#""\u0000""#) == .string("\u{0}"))
    }

    @Test func decodesSurrogatePairs() throws {
        #expect(try parse(#""\uD834\uDD1E""#) == .string("𝄞"))
        #expect(try parse(#""a\ud83d\ude00b""#) == .string("a😀b"))
    }

    @Test func refusesLoneSurrogates() {
        #expect(!parses(#""\uD834""#))
        #expect(!parses(#""\uD834x""#))
        #expect(!parses(#""\uDD1E""#))
        #expect(!parses(#""\uD834\u0041""#))
        #expect(!parses(#""\uD834\uD834""#))
    }

    @Test func refusesInvalidEscapes() {
        #expect(!parses(#""\x41""#))
        #expect(!parses(#""\u12""#))
        #expect(!parses(#""\u12G4""#))
        #expect(!parses(#""\'""#))
    }

    @Test func parsesNumbers() throws {
        #expect(try parse("0") == .number(0))
        #expect(try parse("-0") == .number(-0.0))
        #expect(try parse("3599") == .number(3599))
        #expect(try parse("-12.5e2") == .number(-1250))
        #expect(try parse("1E+2") == .number(100))
        #expect(try parse("2.5e-1") == .number(0.25))
        #expect(try parse("12345678901234567890") == .number(1.2345678901234567e19))
        #expect(try parse("1e308") == .number(1e308))
    }

    @Test func refusesNumbersRFC8259DoesNotAllow() {
        for text in ["01", "-01", "+1", "1.", ".5", "1e", "1e+", "-", "NaN", "Infinity", "-Infinity", "0x10", "1.5.2", "--1"] {
            #expect(!parses(text), "\(text)")
        }
    }

    @Test func refusesNumbersBeyondDouble() {
        #expect(!parses("1e400"))
        #expect(!parses("-1e400"))
    }

    @Test func refusesTruncatedDocuments() {
        for text in ["", " ", "{", "{\"a\"", "{\"a\":", "{\"a\":1", "{\"a\":1,", "[", "[1,", "\"abc", "tru", "nul", "\"\\", "\"\\u00"] {
            #expect(!parses(text), "\(text)")
        }
    }

    @Test func refusesTrailingGarbage() {
        for text in ["{} x", "{}{}", "1 2", "[1]]", "\"a\"\"b\"", "{}\u{0}", "null,"] {
            #expect(!parses(text), "\(text)")
        }
    }

    @Test func refusesStructuralErrors() {
        for text in ["{,}", "[,]", "[1,]", "{\"a\":1,}", "{a:1}", "{'a':1}", "{\"a\" 1}", "[1 2]", "{\"a\":1 \"b\":2}", "{1:2}"] {
            #expect(!parses(text), "\(text)")
        }
    }

    @Test func refusesNestingDeeperThanTheLimitWithoutCrashing() {
        let deepArray = String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000)
        let deepObject = String(repeating: "{\"a\":", count: 10_000) + "1" + String(repeating: "}", count: 10_000)
        #expect(throws: JSONParser.Failure.self) { try parse(deepArray) }
        #expect(throws: JSONParser.Failure.self) { try parse(deepObject) }
        #expect(throws: JSONParser.Failure.self) { try parse(String(repeating: "[", count: 10_000)) }
    }

    @Test func acceptsNestingUpToTheLimit() throws {
        let atLimit = String(repeating: "[", count: 64) + String(repeating: "]", count: 64)
        #expect(throws: Never.self) { try parse(atLimit) }
        #expect(throws: JSONParser.Failure.self) { try parse("[" + atLimit + "]") }
        #expect(throws: JSONParser.Failure.self) { try parse("[[1]]", maxDepth: 1) }
    }

    @Test func refusesDuplicateKeys() {
        #expect(!parses(#"{"access_token":"a","access_token":"b"}"#))
        #expect(!parses(#"{"a":{"b":1,"b":1}}"#))
        #expect(!parses(#"{"a":1,"\u0061":2}"#))
    }

    @Test func acceptsTheSameKeyInDifferentObjects() throws {
        #expect(throws: Never.self) { try parse(#"[{"a":1},{"a":2}]"#) }
    }

    @Test func refusesInvalidUTF8() {
        let cases: [[UInt8]] = [
            [0x22, 0xFF, 0x22], // never valid
            [0x22, 0xC0, 0xAF, 0x22], // overlong '/'
            [0x22, 0xE0, 0x80, 0xAF, 0x22], // overlong
            [0x22, 0xED, 0xA0, 0x80, 0x22], // encoded surrogate
            [0x22, 0xF4, 0x90, 0x80, 0x80, 0x22], // above U+10FFFF
            [0x22, 0xC3, 0x22], // truncated sequence
            [0x22, 0x80, 0x22], // lone continuation
            [0x7B, 0xC3, 0xA9, 0x7D], // non-ASCII outside a string
        ]
        for bytes in cases {
            #expect(throws: JSONParser.Failure.self, "\(bytes)") { try JSONParser.parse(Data(bytes)) }
        }
    }

    @Test func acceptsFourByteUTF8() throws {
        #expect(try JSONParser.parse(Data([0x22, 0xF0, 0x9F, 0x98, 0x80, 0x22])) == .string("😀"))
    }

    @Test func refusesControlCharactersInStrings() {
        for byte: UInt8 in [0x00, 0x01, 0x09, 0x0A, 0x0D, 0x1F] {
            #expect(throws: JSONParser.Failure.self) { try JSONParser.parse(Data([0x22, 0x61, byte, 0x22])) }
        }
    }

    @Test func failureReasonsNeverQuoteTheInput() {
        do {
            _ = try parse(#"{"access_token":"secret-token-value" "#)
            Issue.record("expected a failure")
        } catch {
            #expect(!error.reason.contains("secret-token-value"))
        }
    }
}
