#if canImport(FoundationEssentials)
package import FoundationEssentials
#else
package import Foundation
#endif

import Crypto

/// How a ``ClientRecordStore`` record is kept by ``FileTokenStore`` (one file
/// per record) and `PostgresTokenStore` (one row per record): a JSON envelope
/// like ``TokenFileFormat``'s, sealed the same way.
///
/// Plaintext (the record's bytes in base64: a record is opaque to the store):
///
///     {"format":"swift-oauth2-record","kind":"registration","name":"https://id.example",
///      "record":"<base64>","version":1}
///
/// Encrypted:
///
///     {"encryption":"AES-256-GCM","format":"swift-oauth2-record","keyID":"<16 hex>",
///      "kind":"registration","name":"https://id.example",
///      "sealed":"<base64 of nonce(12) ‖ ciphertext ‖ tag(16)>","version":1}
///
/// The key (kind and name) is in the clear, which names no secret. Its
/// authenticated data is, for each of `"swift-oauth2-record/1"`, the kind
/// and the name, the field's UTF-8 byte count as 8 bytes big-endian followed
/// by its bytes: a record copied under another key does not decrypt. In
/// either form the envelope's key must be the one asked for, so a plaintext
/// record swapped for another is refused too.
package enum RecordFileFormat {
    static let formatName = "swift-oauth2-record"
    static let currentVersion = 1

    private struct Envelope: Codable {
        var format: String?
        var version: Int?
        var kind: String?
        var name: String?
        var record: String?
        var encryption: String?
        var keyID: String?
        var sealed: String?
    }

    /// The envelope's bytes for `record` under `key`, encrypted when `encryption` has a key.
    package static func encode(_ record: Data, key: ClientRecordKey, encryption: FileTokenStore.Encryption) throws(OAuth2Error) -> [UInt8] {
        var envelope = Envelope(format: formatName, version: currentVersion, kind: key.kind, name: key.name)
        if let secret = encryption.key {
            do {
                let box = try AES.GCM.seal(record, using: secret.key, authenticating: authenticatedData(key))
                guard let combined = box.combined else {
                    throw OAuth2Error.store("cannot encrypt the \(key): the sealed box has no combined form")
                }
                envelope.encryption = TokenFileFormat.encryptionName
                envelope.keyID = secret.identifier
                envelope.sealed = combined.base64EncodedString()
            } catch let error as OAuth2Error {
                throw error
            } catch {
                throw OAuth2Error.store("cannot encrypt the \(key)")
            }
        } else {
            envelope.record = record.base64EncodedString()
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        do {
            return Array(try encoder.encode(envelope))
        } catch {
            throw OAuth2Error.store("cannot encode the \(key)")
        }
    }

    /// The record in an envelope's bytes.
    ///
    /// - Parameter subject: how messages name the file or row.
    /// - Throws: `store_error`: damaged, not a record, an unknown version, the
    ///   record of another key, encrypted without a key or with another,
    ///   plaintext where encryption is required, a failed authentication.
    package static func decode(
        _ bytes: [UInt8], key: ClientRecordKey, encryption: FileTokenStore.Encryption, subject: String
    ) throws(OAuth2Error) -> Data {
        let envelope: Envelope
        do {
            envelope = try JSONDecoder().decode(Envelope.self, from: Data(bytes))
        } catch {
            throw OAuth2Error.store("\(subject) is corrupt: it is not a JSON object of the expected fields (damaged or truncated)")
        }
        guard envelope.format == formatName else {
            throw OAuth2Error.store("\(subject) is not a swift-oauth2 record (no \"format\": \"\(formatName)\")")
        }
        guard envelope.version == currentVersion else {
            throw OAuth2Error.store(
                "\(subject) uses format version \(envelope.version.map(String.init) ?? "(none)"), which this version of swift-oauth2 cannot read"
            )
        }
        guard envelope.kind == key.kind, envelope.name == key.name else {
            throw OAuth2Error.store("\(subject) holds the record of another key; refusing a record that was moved or swapped")
        }
        guard let method = envelope.encryption else {
            guard encryption.acceptsPlaintextFiles else {
                throw OAuth2Error.store(
                    "\(subject) is not encrypted, and this store requires encryption; refusing a plaintext record someone may have planted")
            }
            guard let text = envelope.record, let record = Data(base64Encoded: text) else {
                throw OAuth2Error.store("\(subject) is corrupt: it holds neither a record nor encrypted data")
            }
            return record
        }
        guard let secret = encryption.key else {
            throw OAuth2Error.store("\(subject) is encrypted, and this store has no encryption key")
        }
        guard method == TokenFileFormat.encryptionName else {
            throw OAuth2Error.store(
                "\(subject) is encrypted with \(OAuth2Error.sanitize(String(method.prefix(40)))), which this version of swift-oauth2 does not support"
            )
        }
        guard envelope.keyID == secret.identifier else {
            throw OAuth2Error.store("\(subject) was encrypted with a different key than this store's; it cannot be decrypted")
        }
        guard let sealed = envelope.sealed, let combined = Data(base64Encoded: sealed), combined.count > 12 + 16 else {
            throw OAuth2Error.store("\(subject) is corrupt: its encrypted data is missing, damaged or truncated")
        }
        do {
            let box = try AES.GCM.SealedBox(combined: combined)
            return try AES.GCM.open(box, using: secret.key, authenticating: authenticatedData(key))
        } catch {
            throw OAuth2Error.store(
                "\(subject) failed decryption with this store's key: the record was altered, or written under another key")
        }
    }

    /// The AES-GCM associated data of the record under `key` (see the type's documentation).
    static func authenticatedData(_ key: ClientRecordKey) -> [UInt8] {
        var bytes: [UInt8] = []
        for field in ["\(formatName)/\(currentVersion)", key.kind, key.name] {
            let utf8 = Array(field.utf8)
            let count = UInt64(utf8.count)
            bytes += (0..<8).reversed().map { UInt8(truncatingIfNeeded: count >> ($0 * 8)) }
            bytes += utf8
        }
        return bytes
    }
}
