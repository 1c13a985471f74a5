import Foundation
import Testing
@testable import OAuth2

@Suite struct Base64URLTests {
    @Test func encodesTheRFC4648Vectors() {
        let vectors = ["": "", "f": "Zg", "fo": "Zm8", "foo": "Zm9v", "foob": "Zm9vYg", "fooba": "Zm9vYmE", "foobar": "Zm9vYmFy"]
        for (input, output) in vectors {
            #expect(Base64URL.encode(Array(input.utf8)) == output)
        }
    }

    @Test func usesTheURLSafeAlphabet() {
        #expect(Base64URL.encode([0xFB, 0xFF, 0xBF]) == "-_-_")
        #expect(Base64URL.encode([0xFB, 0xFF]) == "-_8")
    }

    @Test func agreesWithFoundationBase64() {
        let bytes = SecureRandom.bytes(97)
        let standard = Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
        #expect(Base64URL.encode(bytes) == standard)
    }
}
