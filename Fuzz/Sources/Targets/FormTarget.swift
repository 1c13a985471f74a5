import Foundation
import OAuth2

/// `FormURLEncoding`: what decodes, encodes and decodes again to the same
/// pairs; any text survives `encodeComponent` then `decodeComponent`, with
/// a space as `+` or as `%20`. The same bytes as a back-channel logout
/// request's body: its `logout_token`, or one of that reader's two codes.
enum FormTarget {
    static func run(_ bytes: UnsafeRawBufferPointer) {
        do throws(OAuth2Error) {
            _ = try BackChannelLogout.logoutToken(fromForm: Data(bytes))
        } catch {
            guard error.code == .invalidLogoutToken || error.code == .responseTooLarge else {
                violation("a back-channel logout body failed with \(error.code)")
            }
        }
        let text = String(decoding: bytes, as: UTF8.self)
        if let pairs = try? FormURLEncoding.decode(text[...]) {
            let encoded = FormURLEncoding.encode(pairs)
            guard let again = try? FormURLEncoding.decode(encoded[...]) else {
                violation("the encoding of decoded pairs does not decode")
            }
            guard samePairs(pairs, again) else {
                violation("decode, encode, decode changes the pairs")
            }
        }
        for spaceAsPlus in [true, false] {
            let component = FormURLEncoding.encodeComponent(text, spaceAsPlus: spaceAsPlus)
            guard let decoded = try? FormURLEncoding.decodeComponent(component[...]),
                decoded.unicodeScalars.elementsEqual(text.unicodeScalars)
            else {
                violation("encodeComponent then decodeComponent changes the text (spaceAsPlus: \(spaceAsPlus))")
            }
        }
    }

    /// Pairs compared by Unicode scalars: `String`'s `==` would let canonically
    /// equivalent spellings pass, and a round trip must keep the bytes.
    private static func samePairs(_ lhs: [(String, String)], _ rhs: [(String, String)]) -> Bool {
        lhs.count == rhs.count
            && zip(lhs, rhs).allSatisfy { left, right in
                left.0.unicodeScalars.elementsEqual(right.0.unicodeScalars) && left.1.unicodeScalars.elementsEqual(right.1.unicodeScalars)
            }
    }
}
