#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

import Crypto

/// How an account name becomes the name of its file in a ``FileTokenStore``
/// directory, and how temporary files are named.
///
/// Every UTF-8 byte outside `[A-Za-z0-9_-]` is percent-encoded (`%2F`, `%2E`,
/// `%25`, …) and `.token` is appended. The encoding is injective, so distinct
/// accounts never share a file; it never yields `/`, `.` or `..` at the start,
/// so a name cannot leave the directory or hide as a dot file. Unicode is not
/// normalised: `é` written precomposed and decomposed are two accounts. An
/// encoding longer than ``maximumEncodedLength`` bytes (the file system allows
/// 255) is replaced by `+sha256-<hex of the account's SHA-256>`; `+` is always
/// encoded in the short form, so the two forms never meet.
///
/// Temporary files start with a dot (`.<file>.<random>.tmp`), which no account
/// file does, so a load never mistakes one for a token.
enum TokenFileName {
    static let suffix = ".token"
    static let temporarySuffix = ".tmp"
    static let maximumEncodedLength = 200

    /// The file name for `account`; throws for an empty account.
    static func fileName(for account: String) throws(OAuth2Error) -> String {
        guard !account.isEmpty else {
            throw OAuth2Error.store("the account name is empty; every token is stored under a non-empty account name")
        }
        var encoded = ""
        for byte in account.utf8 {
            if isUnreserved(byte) {
                encoded.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                encoded += "%" + hex(byte)
            }
        }
        if encoded.utf8.count > maximumEncodedLength {
            encoded = "+sha256-" + SHA256.hash(data: Array(account.utf8)).map(hex).joined()
        }
        return encoded + suffix
    }

    static let recordSuffix = ".record"

    /// The file name of a ``ClientRecordStore`` record: the kind and the name
    /// encoded as an account is, joined by `.` (which the encoding never
    /// yields, so the two parts are unambiguous), and `.record`, which no
    /// token or lock file ends with. Too long, `+sha256-<hex>` of the
    /// record's authenticated data (kind and name, length-prefixed).
    static func fileName(for key: ClientRecordKey) throws(OAuth2Error) -> String {
        guard !key.kind.isEmpty, !key.name.isEmpty else {
            throw OAuth2Error.store("a record's kind and name must not be empty")
        }
        let encoded = encode(key.kind) + "." + encode(key.name)
        guard encoded.utf8.count <= maximumEncodedLength else {
            return "+sha256-" + SHA256.hash(data: RecordFileFormat.authenticatedData(key)).map(hex).joined() + recordSuffix
        }
        return encoded + recordSuffix
    }

    private static func encode(_ text: String) -> String {
        var encoded = ""
        for byte in text.utf8 {
            if isUnreserved(byte) {
                encoded.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                encoded += "%" + hex(byte)
            }
        }
        return encoded
    }

    static let lockSuffix = ".lock"

    /// The name of `account`'s lock file: its token file's name with `.lock`
    /// for `.token` (see ``FileTokenStore/withLock(account:timeout:_:)``).
    static func lockName(for account: String) throws(OAuth2Error) -> String {
        let name = try fileName(for: account)
        return String(name.dropLast(suffix.count)) + lockSuffix
    }

    /// A fresh, unguessable temporary name next to `fileName`.
    static func temporaryName(for fileName: String) -> String {
        let random = SecureRandom.bytes(8).map(hex).joined()
        return "." + fileName + "." + random + temporarySuffix
    }

    /// Whether `name` is one of the store's temporary files.
    static func isTemporary(_ name: String) -> Bool {
        name.hasPrefix(".") && name.hasSuffix(temporarySuffix) && (name.contains(suffix + ".") || name.contains(recordSuffix + "."))
    }

    private static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"), UInt8(ascii: "-"):
            return true
        default:
            return false
        }
    }

    static func hex(_ byte: UInt8) -> String {
        let digits = Array("0123456789ABCDEF")
        return String([digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]])
    }
}
