import Foundation
import OAuth2

/// `JSONParser` against Foundation's `JSONSerialization`, the differential of issue 11.
///
/// Where both accept, the values must be the same: the same kinds, strings
/// with the same Unicode scalars, object keys the same set. Numbers compare
/// exactly (both parse decimal text correctly rounded), except where
/// Foundation gives an `NSDecimalNumber` (integers beyond 64 bits, long
/// mantissas): it keeps 38 significant digits and its `doubleValue` is not
/// correctly rounded (5.554…e122 comes out 7 units in the last place off),
/// so its digits are read as a Double and agree with ours to within a
/// relative 1e-15 (the 38-digit cut can move the rounding by one unit).
///
/// One difference in values is Foundation's: it drops a U+FEFF written
/// unescaped at the start of a string or key, or right after an escape (it
/// decodes each run of unescaped bytes as a document, byte-order mark and
/// all), where RFC 8259 keeps it and so do we. Strings therefore compare
/// with every U+FEFF removed when they differ otherwise.
///
/// Where they differ on accepting, only these are allowed, each one a
/// documented strictness of `JSONParser` or a documented extension of
/// Foundation's:
/// - we refuse a duplicate key (Foundation keeps the last value);
/// - we refuse nesting deeper than 64 levels (Foundation allows 512);
/// - we refuse a trailing comma before `]` or `}` (Foundation reads `[1,]`);
/// - we read UTF-8 only (RFC 8259 §8.1); Foundation also reads UTF-16 and
///   UTF-32, which it detects from a byte-order mark or from NUL bytes
///   among the first four.
/// Anything else, in either direction, is a finding.
enum JSONTarget {
    static func run(_ bytes: UnsafeRawBufferPointer) {
        let data = Data(bytes)
        let ours: Result<JSONValue, JSONParser.Failure>
        do throws(JSONParser.Failure) {
            ours = .success(try JSONParser.parse(data))
        } catch {
            ours = .failure(error)
        }
        let theirs = try? JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])
        switch (ours, theirs) {
        case (.success(let value), let foundation?):
            if let difference = difference(value, foundation, path: "$") {
                violation("JSONParser and JSONSerialization read different values: \(difference)")
            }
        case (.success, nil):
            violation("JSONParser accepts what JSONSerialization refuses")
        case (.failure(let failure), _?):
            guard isDocumentedStrictness(failure, bytes) else {
                violation("JSONParser refuses what JSONSerialization accepts, and no documented strictness explains it: \(failure.reason)")
            }
        case (.failure, nil):
            break
        }
    }

    /// Whether our refusal is one of the documented differences listed on the type.
    private static func isDocumentedStrictness(_ failure: JSONParser.Failure, _ bytes: UnsafeRawBufferPointer) -> Bool {
        if failure.reason.hasPrefix("duplicate key") || failure.reason.hasPrefix("nesting deeper than") {
            return true
        }
        if isOtherUnicodeEncoding(bytes) {
            return true
        }
        // A trailing comma: the unexpected byte is a closing bracket whose previous
        // non-whitespace byte is a comma.
        if failure.reason.hasPrefix("unexpected byte at offset "), let offset = Int(failure.reason.split(separator: " ").last ?? ""),
            offset < bytes.count, bytes[offset] == UInt8(ascii: "]") || bytes[offset] == UInt8(ascii: "}")
        {
            var before = offset - 1
            while before >= 0, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[before]) { before -= 1 }
            return before >= 0 && bytes[before] == UInt8(ascii: ",")
        }
        return false
    }

    /// Foundation's encoding detection: a UTF-16 or UTF-32 byte-order mark, or a NUL among the first four bytes.
    private static func isOtherUnicodeEncoding(_ bytes: UnsafeRawBufferPointer) -> Bool {
        if bytes.count >= 2, (bytes[0] == 0xFE && bytes[1] == 0xFF) || (bytes[0] == 0xFF && bytes[1] == 0xFE) {
            return true
        }
        return bytes.prefix(4).contains(0)
    }

    /// Where two values differ, as a JSON path, or `nil` when they agree.
    private static func difference(_ ours: JSONValue, _ theirs: Any, path: String) -> String? {
        switch ours {
        case .null:
            return theirs is NSNull ? nil : "\(path): null against \(type(of: theirs))"
        case .bool(let value):
            guard let number = theirs as? NSNumber, isBoolean(number) else { return "\(path): bool against \(type(of: theirs))" }
            return number.boolValue == value ? nil : "\(path): \(value) against \(number.boolValue)"
        case .number(let value):
            guard let number = theirs as? NSNumber, !isBoolean(number) else { return "\(path): number against \(type(of: theirs))" }
            return numbersAgree(value, number)
                ? nil : "\(path): \(value) against \(number) (\(type(of: number)), \(String(cString: number.objCType)))"
        case .string(let value):
            guard let string = theirs as? String else { return "\(path): string against \(type(of: theirs))" }
            return sameString(value, string) ? nil : "\(path): strings with different scalars"
        case .array(let values):
            guard let array = theirs as? [Any] else { return "\(path): array against \(type(of: theirs))" }
            guard values.count == array.count else { return "\(path): \(values.count) elements against \(array.count)" }
            for (index, (value, other)) in zip(values, array).enumerated() {
                if let difference = difference(value, other, path: "\(path)[\(index)]") { return difference }
            }
            return nil
        case .object(let members):
            guard let object = theirs as? [String: Any] else { return "\(path): object against \(type(of: theirs))" }
            // Keys compare without U+FEFF too; keys that differ only by one are one key to Foundation.
            let theirKeys = Dictionary(object.map { (withoutByteOrderMarks($0.key), $0.value) }, uniquingKeysWith: { first, _ in first })
            let ourKeys = Set(members.keys.map(withoutByteOrderMarks))
            if theirKeys.count < object.count || ourKeys.count < members.count { return nil }
            guard members.count == object.count else { return "\(path): \(members.count) members against \(object.count)" }
            for (key, value) in members {
                guard let other = theirKeys[withoutByteOrderMarks(key)] else { return "\(path): a key only JSONParser has" }
                if let difference = difference(value, other, path: "\(path).<key>") { return difference }
            }
            return nil
        }
    }

    private static let byteOrderMark: Unicode.Scalar = "\u{FEFF}"

    private static func withoutByteOrderMarks(_ string: String) -> String {
        var scalars = String.UnicodeScalarView()
        scalars.append(contentsOf: string.unicodeScalars.lazy.filter { $0 != byteOrderMark })
        return String(scalars)
    }

    /// Equal scalars, or equal once every U+FEFF is gone (see the type's comment).
    private static func sameString(_ ours: String, _ theirs: String) -> Bool {
        ours.unicodeScalars.elementsEqual(theirs.unicodeScalars)
            || withoutByteOrderMarks(ours).unicodeScalars.elementsEqual(withoutByteOrderMarks(theirs).unicodeScalars)
    }

    private static let booleanType = type(of: NSNumber(value: true))

    private static func isBoolean(_ number: NSNumber) -> Bool {
        type(of: number) == booleanType
    }

    private static func numbersAgree(_ ours: Double, _ number: NSNumber) -> Bool {
        if number is NSDecimalNumber {
            // The decimal's own digits (up to 38 significant), read as a Double:
            // its doubleValue can be off by far more than rounding.
            guard let theirs = Double(number.stringValue) else { return false }
            return ours == theirs || abs(ours - theirs) <= 1e-15 * max(abs(ours), abs(theirs))
        }
        switch String(cString: number.objCType) {
        case "Q": return ours == Double(number.uint64Value)
        case "d", "f": return ours == number.doubleValue
        default: return ours == Double(number.int64Value)
        }
    }
}
