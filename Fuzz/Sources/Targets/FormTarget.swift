import OAuth2

/// `FormURLEncoding`: what decodes, encodes and decodes again to the same
/// pairs; any text survives `encodeComponent` then `decodeComponent`, with
/// a space as `+` or as `%20`.
enum FormTarget {
    static func run(_ bytes: UnsafeRawBufferPointer) {
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
