#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

public import Crypto

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

extension FileTokenStore {
    /// A 256-bit AES key that encrypts a ``FileTokenStore``'s files with AES-GCM.
    ///
    /// It comes from the caller (a `SymmetricKey` or 32 raw bytes), from an
    /// environment variable, or from a key file. The text forms, in a variable
    /// or a key file, are 64 hexadecimal digits or the base64 of 32 bytes
    /// (standard or URL-safe alphabet, padding optional); whitespace around the
    /// text is ignored. `openssl rand -hex 32` makes one.
    ///
    /// Neither its `description` nor any error it throws shows the key.
    public struct EncryptionKey: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
        /// The key itself.
        let key: SymmetricKey
        /// A public fingerprint of the key (an HMAC of a constant, 8 bytes in hex),
        /// written into each encrypted file so that a wrong key is told apart
        /// from a damaged file.
        let identifier: String

        /// Wraps a 256-bit key; throws `store_error` for any other size.
        public init(_ key: SymmetricKey) throws(OAuth2Error) {
            guard key.bitCount == 256 else {
                throw OAuth2Error.store("the token store's encryption key has \(key.bitCount) bits; it must have 256")
            }
            self.key = key
            let code = HMAC<SHA256>.authenticationCode(for: Array("swift-oauth2 token file key id".utf8), using: key)
            identifier = code.prefix(8).map { TokenFileName.hex($0).lowercased() }.joined()
        }

        /// Wraps 32 raw bytes; throws `store_error` for any other count.
        public init(bytes: some Collection<UInt8>) throws(OAuth2Error) {
            guard bytes.count == 32 else {
                throw OAuth2Error.store("the token store's encryption key has \(bytes.count) bytes; it must have 32 (256 bits)")
            }
            try self.init(SymmetricKey(data: Array(bytes)))
        }

        /// Reads a key written as 64 hex digits or as the base64 of 32 bytes.
        ///
        /// - Throws: `store_error` when `text` is neither; the message gives its
        ///   length, never its content.
        public init(text: String) throws(OAuth2Error) {
            guard let bytes = Self.decode(text) else {
                throw OAuth2Error.store(
                    "the token store's encryption key is not 64 hex digits or the base64 of 32 bytes (it has \(text.trimmingSurroundingWhitespace.count) characters)"
                )
            }
            try self.init(bytes: bytes)
        }

        /// Reads the key from the environment variable `name` (hex or base64, see ``FileTokenStore/EncryptionKey``).
        ///
        /// - Throws: `store_error` when the variable is unset, empty or not a 256-bit key.
        public static func fromEnvironment(_ name: String) throws(OAuth2Error) -> EncryptionKey {
            guard let raw = getenv(name) else {
                throw OAuth2Error.store("the environment variable \(name) that should hold the token store's encryption key is not set")
            }
            let text = String(cString: raw)
            guard !text.trimmingSurroundingWhitespace.isEmpty else {
                throw OAuth2Error.store("the environment variable \(name) that should hold the token store's encryption key is empty")
            }
            guard let bytes = decode(text) else {
                throw OAuth2Error.store(
                    "the environment variable \(name) is not a 256-bit key: expected 64 hex digits or the base64 of 32 bytes (it has \(text.trimmingSurroundingWhitespace.count) characters)"
                )
            }
            return try EncryptionKey(bytes: bytes)
        }

        /// Reads the key from a key file: exactly 32 raw bytes, or the hex or base64 text form.
        ///
        /// The file must be a regular file owned by the user running the
        /// process, with no permission for group or others (0600 or 0400), and
        /// at most 4 KiB; otherwise this throws `store_error` rather than use a
        /// key someone else could have read or planted. A symbolic link is
        /// followed (secret mounts are often links) and the file it leads to
        /// is checked.
        public static func fromFile(atPath path: String) throws(OAuth2Error) -> EncryptionKey {
            let fd: Int32
            do {
                fd = try StoreFileSystem.openFile(path, flags: O_RDONLY | O_NONBLOCK)
            } catch {
                throw OAuth2Error.store("cannot open the token store's key file \(path): \(error.reason)")
            }
            defer { StoreFileSystem.closeQuietly(fd) }
            let bytes: [UInt8]
            do {
                let status = try StoreFileSystem.status(of: fd)
                guard status.isRegularFile else {
                    throw OAuth2Error.store("the token store's key file \(path) is not a regular file")
                }
                try status.requirePrivate(
                    "the token store's key file \(path)",
                    ownerAdvice: "refusing to use it",
                    modeAdvice: "refusing it (make it 0600 and consider the key exposed)"
                )
                guard let read = try StoreFileSystem.readAll(fd, limit: 4096) else {
                    throw OAuth2Error.store("the token store's key file \(path) is over 4 KiB; it should hold one 256-bit key")
                }
                bytes = read
            } catch let failure as StoreFileSystem.Failure {
                throw OAuth2Error.store("cannot read the token store's key file \(path): \(failure.reason)")
            } catch let error as OAuth2Error {
                throw error
            } catch {
                throw OAuth2Error.store("cannot read the token store's key file \(path)")
            }
            if bytes.count == 32 {
                return try EncryptionKey(bytes: bytes)
            }
            guard let text = String(validating: bytes, as: UTF8.self), let decoded = decode(text) else {
                throw OAuth2Error.store(
                    "the token store's key file \(path) does not hold a 256-bit key: expected 32 raw bytes, 64 hex digits or the base64 of 32 bytes (it has \(bytes.count) bytes)"
                )
            }
            return try EncryptionKey(bytes: decoded)
        }

        /// `FileTokenStore.EncryptionKey(redacted)`: never the key.
        public var description: String { "FileTokenStore.EncryptionKey(redacted)" }

        /// The same as ``description``.
        public var debugDescription: String { description }

        /// A mirror without children, so `dump` and debuggers do not print the key.
        public var customMirror: Mirror { Mirror(self, children: []) }

        /// The 32 bytes of a hex or base64 key text, or `nil`.
        static func decode(_ text: String) -> [UInt8]? {
            let text = text.trimmingSurroundingWhitespace
            if text.count == 64, let bytes = decodeHex(String(text)) { return bytes }
            var base64 = String(text.map { $0 == "-" ? "+" : $0 == "_" ? "/" : $0 })
            if base64.count % 4 != 0 { base64 += String(repeating: "=", count: 4 - base64.count % 4) }
            guard let data = Data(base64Encoded: base64), data.count == 32 else { return nil }
            return Array(data)
        }

        private static func decodeHex(_ text: String) -> [UInt8]? {
            var bytes: [UInt8] = []
            var high: UInt8?
            for scalar in text.unicodeScalars {
                guard scalar.isASCII, let nibble = UInt8(String(scalar), radix: 16) else { return nil }
                if let pending = high {
                    bytes.append(pending << 4 | nibble)
                    high = nil
                } else {
                    high = nibble
                }
            }
            return high == nil ? bytes : nil
        }
    }
}
