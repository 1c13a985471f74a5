extension Collection where Element == UInt8 {
    /// Whether the bytes spell `lowercaseWord`, ignoring ASCII case: a URL's
    /// scheme or host, a response field's name. Reads the bytes as they are,
    /// without building a string, for checks that every request makes.
    func equalsIgnoringASCIICase(_ lowercaseWord: StaticString) -> Bool {
        guard count == lowercaseWord.utf8CodeUnitCount else { return false }
        return lowercaseWord.withUTF8Buffer { word in
            zip(self, word).allSatisfy { byte, expected in
                byte == expected || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") && byte | 0x20 == expected)
            }
        }
    }
}
