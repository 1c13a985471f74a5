#if canImport(FoundationEssentials)
package import FoundationEssentials
#else
package import Foundation
#endif

/// A strict RFC 8259 JSON parser over bytes, for provider responses.
///
/// Stricter than `JSONDecoder` where a token response could be ambiguous or
/// hostile: it refuses duplicate object keys, lone UTF-16 surrogates, invalid
/// UTF-8, control characters in strings, numbers that are not finite doubles,
/// trailing bytes and nesting deeper than `maxDepth`. Recursion is bounded by
/// that depth, so a hostile body cannot exhaust the stack.
///
/// The `json` fuzz target (Fuzz/) holds it to Foundation's `JSONSerialization`:
/// the same values wherever both accept; where only Foundation accepts, the
/// reason is a duplicate key, the depth, or Foundation's trailing commas and
/// UTF-16/32 input.
package enum JSONParser {
    /// Why a body is not acceptable JSON. The reason names a byte offset, never the content.
    package struct Failure: Error, Equatable {
        package let reason: String
    }

    /// Parses one JSON value filling the whole of `data` (surrounding whitespace allowed).
    ///
    /// A UTF-8 byte-order mark at the very start is skipped, as RFC 8259 §8.1
    /// lets a parser do (some providers send one); anywhere else it is an error.
    ///
    /// - Throws: ``Failure`` for anything RFC 8259 does not allow, and for
    ///   duplicate keys, non-finite numbers and nesting over `maxDepth`.
    package static func parse(_ data: Data, maxDepth: Int = 64) throws(Failure) -> JSONValue {
        let result: Result<JSONValue, Failure> = data.withUnsafeBytes { buffer in
            var parser = Parser(bytes: buffer, maxDepth: maxDepth)
            do throws(Failure) {
                return .success(try parser.parseDocument())
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }
}

extension JSONParser {
    private struct Parser {
        let bytes: UnsafeRawBufferPointer
        let maxDepth: Int
        var index = 0
        var depth = 0

        init(bytes: UnsafeRawBufferPointer, maxDepth: Int) {
            self.bytes = bytes
            self.maxDepth = maxDepth
        }

        mutating func parseDocument() throws(Failure) -> JSONValue {
            if bytes.count >= 3, bytes[0] == 0xEF, bytes[1] == 0xBB, bytes[2] == 0xBF {
                index = 3
            }
            skipWhitespace()
            guard index < bytes.count else { throw Failure(reason: "empty document") }
            let value = try parseValue()
            skipWhitespace()
            guard index == bytes.count else {
                throw Failure(reason: "unexpected bytes after the value at offset \(index)")
            }
            return value
        }

        private mutating func parseValue() throws(Failure) -> JSONValue {
            guard index < bytes.count else { throw truncated() }
            switch bytes[index] {
            case UInt8(ascii: "{"): return try parseObject()
            case UInt8(ascii: "["): return try parseArray()
            case UInt8(ascii: "\""): return .string(try parseString())
            case UInt8(ascii: "t"):
                try parseLiteral("true")
                return .bool(true)
            case UInt8(ascii: "f"):
                try parseLiteral("false")
                return .bool(false)
            case UInt8(ascii: "n"):
                try parseLiteral("null")
                return .null
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try parseNumber())
            default: throw unexpected()
            }
        }

        private mutating func enterContainer() throws(Failure) {
            depth += 1
            guard depth <= maxDepth else {
                throw Failure(reason: "nesting deeper than \(maxDepth) levels at offset \(index)")
            }
            index += 1
        }

        private mutating func parseObject() throws(Failure) -> JSONValue {
            try enterContainer()
            var object: [String: JSONValue] = [:]
            skipWhitespace()
            if try peek() == UInt8(ascii: "}") {
                index += 1
                depth -= 1
                return .object(object)
            }
            while true {
                guard try peek() == UInt8(ascii: "\"") else { throw unexpected() }
                let keyOffset = index
                let key = try parseString()
                skipWhitespace()
                guard try peek() == UInt8(ascii: ":") else { throw unexpected() }
                index += 1
                skipWhitespace()
                let value = try parseValue()
                guard object.updateValue(value, forKey: key) == nil else {
                    throw Failure(reason: "duplicate key at offset \(keyOffset)")
                }
                skipWhitespace()
                switch try peek() {
                case UInt8(ascii: ","):
                    index += 1
                    skipWhitespace()
                case UInt8(ascii: "}"):
                    index += 1
                    depth -= 1
                    return .object(object)
                default:
                    throw unexpected()
                }
            }
        }

        private mutating func parseArray() throws(Failure) -> JSONValue {
            try enterContainer()
            var array: [JSONValue] = []
            skipWhitespace()
            if try peek() == UInt8(ascii: "]") {
                index += 1
                depth -= 1
                return .array(array)
            }
            while true {
                array.append(try parseValue())
                skipWhitespace()
                switch try peek() {
                case UInt8(ascii: ","):
                    index += 1
                    skipWhitespace()
                case UInt8(ascii: "]"):
                    index += 1
                    depth -= 1
                    return .array(array)
                default:
                    throw unexpected()
                }
            }
        }

        /// Parses a string starting at its opening quote.
        ///
        /// The common case, a string without escapes, is validated in place and
        /// copied once; a string with escapes is rebuilt byte by byte.
        private mutating func parseString() throws(Failure) -> String {
            index += 1
            let start = index
            while index < bytes.count {
                let byte = bytes[index]
                if byte == UInt8(ascii: "\"") {
                    let string = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
                    index += 1
                    return string
                }
                if byte == UInt8(ascii: "\\") {
                    var scratch = Array(bytes[start..<index])
                    return try parseEscapedString(into: &scratch)
                }
                index += try scalarLength(byte)
            }
            throw truncated()
        }

        private mutating func parseEscapedString(into scratch: inout [UInt8]) throws(Failure) -> String {
            while index < bytes.count {
                let byte = bytes[index]
                switch byte {
                case UInt8(ascii: "\""):
                    index += 1
                    return String(decoding: scratch, as: UTF8.self)
                case UInt8(ascii: "\\"):
                    try parseEscape(into: &scratch)
                default:
                    let length = try scalarLength(byte)
                    scratch.append(contentsOf: bytes[index..<index + length])
                    index += length
                }
            }
            throw truncated()
        }

        /// The length of the UTF-8 sequence at `index`, refusing control characters and invalid UTF-8.
        @inline(__always)
        private func scalarLength(_ byte: UInt8) throws(Failure) -> Int {
            if byte >= 0x20 && byte < 0x80 { return 1 }
            if byte < 0x20 {
                throw Failure(reason: "control character in a string at offset \(index)")
            }
            guard let length = UTF8Validation.sequenceLength(bytes, at: index) else {
                throw Failure(reason: "invalid UTF-8 at offset \(index)")
            }
            return length
        }

        private mutating func parseEscape(into scratch: inout [UInt8]) throws(Failure) {
            let escapeOffset = index
            index += 1
            guard index < bytes.count else { throw truncated() }
            let byte = bytes[index]
            index += 1
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): scratch.append(byte)
            case UInt8(ascii: "b"): scratch.append(0x08)
            case UInt8(ascii: "f"): scratch.append(0x0C)
            case UInt8(ascii: "n"): scratch.append(0x0A)
            case UInt8(ascii: "r"): scratch.append(0x0D)
            case UInt8(ascii: "t"): scratch.append(0x09)
            case UInt8(ascii: "u"):
                let unit = try parseHex4()
                let scalarValue: UInt32
                switch unit {
                case 0xD800...0xDBFF:
                    guard index + 1 < bytes.count,
                        bytes[index] == UInt8(ascii: "\\"),
                        bytes[index + 1] == UInt8(ascii: "u")
                    else {
                        throw Failure(reason: "unpaired surrogate escape at offset \(escapeOffset)")
                    }
                    index += 2
                    let low = try parseHex4()
                    guard (0xDC00...0xDFFF).contains(low) else {
                        throw Failure(reason: "unpaired surrogate escape at offset \(escapeOffset)")
                    }
                    scalarValue = 0x10000 + ((UInt32(unit) - 0xD800) << 10) + (UInt32(low) - 0xDC00)
                case 0xDC00...0xDFFF:
                    throw Failure(reason: "unpaired surrogate escape at offset \(escapeOffset)")
                default:
                    scalarValue = UInt32(unit)
                }
                guard let scalar = Unicode.Scalar(scalarValue) else {
                    throw Failure(reason: "invalid escape at offset \(escapeOffset)")
                }
                UTF8.encode(scalar) { scratch.append($0) }
            default:
                throw Failure(reason: "invalid escape at offset \(escapeOffset)")
            }
        }

        private mutating func parseHex4() throws(Failure) -> UInt16 {
            guard index + 4 <= bytes.count else { throw truncated() }
            var value: UInt16 = 0
            for _ in 0..<4 {
                let byte = bytes[index]
                let digit: UInt8
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
                case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
                case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
                default: throw Failure(reason: "invalid \\u escape at offset \(index)")
                }
                value = value << 4 | UInt16(digit)
                index += 1
            }
            return value
        }

        /// Parses `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?` as a finite Double.
        private mutating func parseNumber() throws(Failure) -> Double {
            let start = index
            var negative = false
            if bytes[index] == UInt8(ascii: "-") {
                negative = true
                index += 1
            }
            guard index < bytes.count, isDigit(bytes[index]) else { throw malformedNumber(start) }
            var integer: Int64 = 0
            var digits = 0
            if bytes[index] == UInt8(ascii: "0") {
                index += 1
                if index < bytes.count, isDigit(bytes[index]) {
                    throw Failure(reason: "number with a leading zero at offset \(start)")
                }
                digits = 1
            } else {
                while index < bytes.count, isDigit(bytes[index]) {
                    if digits < 18 { integer = integer * 10 + Int64(bytes[index] - UInt8(ascii: "0")) }
                    digits += 1
                    index += 1
                }
            }
            var isInteger = true
            if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
                isInteger = false
                index += 1
                guard skipDigits() else { throw malformedNumber(start) }
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
                isInteger = false
                index += 1
                if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
                    index += 1
                }
                guard skipDigits() else { throw malformedNumber(start) }
            }
            // Integers of up to 15 digits are exact in a Double; the common case skips string conversion.
            if isInteger && digits <= 15 {
                let value = Double(integer)
                return negative ? -value : value
            }
            let text = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
            guard let value = Double(text), value.isFinite else {
                throw Failure(reason: "number out of range at offset \(start)")
            }
            return value
        }

        /// Skips one or more digits; `false` when there is none.
        private mutating func skipDigits() -> Bool {
            let start = index
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
            return index > start
        }

        @inline(__always)
        private func isDigit(_ byte: UInt8) -> Bool {
            byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
        }

        private mutating func parseLiteral(_ literal: StaticString) throws(Failure) {
            let length = literal.utf8CodeUnitCount
            guard index + length <= bytes.count else { throw truncated() }
            let expected = UnsafeRawBufferPointer(start: literal.utf8Start, count: length)
            for offset in 0..<length where bytes[index + offset] != expected[offset] {
                throw unexpected()
            }
            index += length
        }

        @inline(__always)
        private mutating func skipWhitespace() {
            while index < bytes.count {
                switch bytes[index] {
                case 0x20, 0x09, 0x0A, 0x0D: index += 1
                default: return
                }
            }
        }

        private func peek() throws(Failure) -> UInt8 {
            guard index < bytes.count else { throw truncated() }
            return bytes[index]
        }

        private func truncated() -> Failure {
            Failure(reason: "unexpected end of input at offset \(index)")
        }

        private func unexpected() -> Failure {
            Failure(reason: "unexpected byte at offset \(index)")
        }

        private func malformedNumber(_ start: Int) -> Failure {
            Failure(reason: "malformed number at offset \(start)")
        }
    }
}
