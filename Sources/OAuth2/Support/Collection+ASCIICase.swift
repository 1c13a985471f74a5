extension Collection where Element == UInt8 {
    /// Whether the bytes spell `lowercaseWord`, ignoring ASCII case: a URL's
    /// scheme or host, a response field's name. Reads the bytes as they are,
    /// without building a string, for checks that every request makes; in
    /// place when they are contiguous (a native string's UTF-8 view), where
    /// walking the view index by index costs more than the comparison.
    func equalsIgnoringASCIICase(_ lowercaseWord: StaticString) -> Bool {
        guard count == lowercaseWord.utf8CodeUnitCount else { return false }
        return lowercaseWord.withUTF8Buffer { word in
            if let equal = withContiguousStorageIfAvailable({ Self.bytes($0, equalIgnoringASCIICase: word) }) {
                return equal
            }
            return Self.bytes(self, equalIgnoringASCIICase: word)
        }
    }

    private static func bytes(_ bytes: some Collection<UInt8>, equalIgnoringASCIICase word: UnsafeBufferPointer<UInt8>) -> Bool {
        zip(bytes, word).allSatisfy { byte, expected in
            byte == expected || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") && byte | 0x20 == expected)
        }
    }
}
