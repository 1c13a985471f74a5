#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

import Crypto

/// The contents of a ``FileTokenStore`` file: a small JSON envelope that says
/// what it holds, so plaintext and encrypted files are told apart and a later
/// format can be added without misreading an older one.
///
/// The store writes version 2 and reads versions 1 and 2; any other version
/// is an error, never a guess.
///
/// Version 2, plaintext (`binding` only when the token has one):
///
///     {"binding":{"clientID":"…","tokenEndpoint":"…"},"format":"swift-oauth2-token",
///      "token":{...},"version":2}
///
/// Version 2, encrypted:
///
///     {"binding":{"clientID":"…","tokenEndpoint":"…"},"encryption":"AES-256-GCM",
///      "format":"swift-oauth2-token","keyID":"<16 hex>",
///      "sealed":"<base64 of nonce(12) ‖ ciphertext ‖ tag(16)>","version":2}
///
/// The token is ``AccessToken``'s Codable form, its own `binding` included,
/// with dates as seconds since 1970 (a JSON number: a round trip is exact to
/// within a microsecond). The encrypted form seals that same JSON with a
/// random 96-bit nonce.
///
/// The envelope's `binding` is the token's ``TokenBinding`` in the clear,
/// which names no secret: a reader can see which provider and client a file
/// belongs to without the key, and the encrypted form authenticates it.
/// Its authenticated data is the concatenation, for each of
/// `"swift-oauth2-token/2"`, the account name, and, when the envelope has a
/// binding, its token endpoint and its client id, of the field's UTF-8 byte
/// count as 8 bytes big-endian followed by its UTF-8 bytes. The lengths make
/// the encoding unambiguous (no choice of account and binding strings
/// produces another's bytes), so a file copied under another account's name,
/// or whose header binding was changed, added or removed, does not decrypt.
/// In a plaintext file nothing is authenticated, so the envelope's binding
/// and the token's must agree or the file is corrupt; in an encrypted one
/// they must agree too, after decryption.
///
/// Version 1 (written before bindings existed) has no envelope `binding`:
///
///     {"format":"swift-oauth2-token","token":{...},"version":1}
///     {"encryption":"AES-256-GCM","format":"swift-oauth2-token","keyID":"<16 hex>",
///      "sealed":"<base64>","version":1}
///
/// Its authenticated data is `"swift-oauth2-token/1\n"` followed by the
/// account name's UTF-8. Its token normally has no `binding` (it loads as
/// `nil`, and the client stamps and saves it again, which writes version 2);
/// one that has a binding inside the token keeps it.
package enum TokenFileFormat {
    static let formatName = "swift-oauth2-token"
    /// The version every save writes.
    static let currentVersion = 2
    /// The versions a load reads.
    static let readableVersions = 1...2
    static let encryptionName = "AES-256-GCM"

    private struct Header: Decodable {
        var format: String?
        var version: Int?
    }

    private struct Envelope: Codable {
        var format: String
        var version: Int
        /// Version 2 only: the token's binding in the clear (authenticated when encrypted).
        var binding: TokenBinding?
        var token: AccessToken?
        var encryption: String?
        var keyID: String?
        var sealed: String?
    }

    /// The file's bytes for `token` in the current version, encrypted when `encryption` has a key.
    package static func encode(_ token: AccessToken, account: String, encryption: FileTokenStore.Encryption) throws(OAuth2Error) -> [UInt8]
    {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        encoder.dateEncodingStrategy = .secondsSince1970
        do {
            var envelope = Envelope(format: formatName, version: currentVersion, binding: token.binding)
            if let key = encryption.key {
                let plaintext = try encoder.encode(token)
                let associated = authenticatedData(version: currentVersion, account: account, binding: token.binding)
                let box = try AES.GCM.seal(plaintext, using: key.key, authenticating: associated)
                guard let combined = box.combined else {
                    throw OAuth2Error.store(
                        "cannot encrypt the token of \(FileTokenStore.describe(account)): the sealed box has no combined form")
                }
                envelope.encryption = encryptionName
                envelope.keyID = key.identifier
                envelope.sealed = combined.base64EncodedString()
            } else {
                envelope.token = token
            }
            return Array(try encoder.encode(envelope))
        } catch let error as OAuth2Error {
            throw error
        } catch {
            // Neither error can carry the token, but the message does not need them.
            throw OAuth2Error.store("cannot encode the token of \(FileTokenStore.describe(account))")
        }
    }

    /// The token in a file's bytes, of any readable version.
    ///
    /// - Parameter subject: how messages name the file ("the token file of account "x" (path)").
    /// - Throws: `store_error`, one distinct message per problem: damaged,
    ///   not a token file, unknown version, encrypted without a key, plaintext
    ///   where encryption is required, a different key, a failed authentication,
    ///   a header binding that disagrees with the token's.
    package static func decode(
        _ bytes: [UInt8],
        account: String,
        encryption: FileTokenStore.Encryption,
        subject: String
    ) throws(OAuth2Error) -> AccessToken {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .secondsSince1970
        let data = Data(bytes)

        let header: Header
        do {
            header = try decoder.decode(Header.self, from: data)
        } catch {
            throw OAuth2Error.store(
                "\(subject) is corrupt: it is not a JSON object (damaged or truncated); refusing to treat it as no token")
        }
        guard header.format == formatName else {
            throw OAuth2Error.store("\(subject) is not a swift-oauth2 token file (no \"format\": \"\(formatName)\")")
        }
        guard let version = header.version else {
            throw OAuth2Error.store("\(subject) is corrupt: it has no format version")
        }
        guard readableVersions.contains(version) else {
            throw OAuth2Error.store(
                "\(subject) uses format version \(version), which this version of swift-oauth2 cannot read (it reads versions up to \(readableVersions.upperBound))"
            )
        }

        let envelope: Envelope
        do {
            envelope = try decoder.decode(Envelope.self, from: data)
        } catch {
            throw OAuth2Error.store("\(subject) is corrupt: \(fieldProblem(error))")
        }
        // Version 1 had no header binding: a stray one means nothing and binds nothing.
        let headerBinding = version >= 2 ? envelope.binding : nil

        guard let method = envelope.encryption else {
            guard encryption.acceptsPlaintextFiles else {
                throw OAuth2Error.store(
                    "\(subject) is not encrypted, and this store requires encryption; refusing a plaintext token file someone may have planted"
                )
            }
            guard let token = envelope.token else {
                throw OAuth2Error.store("\(subject) is corrupt: it holds neither a token nor encrypted data")
            }
            if version >= 2 {
                try checkBinding(of: token, matches: headerBinding, subject: subject)
            }
            return token
        }

        guard let key = encryption.key else {
            throw OAuth2Error.store("\(subject) is encrypted, and this store has no encryption key")
        }
        guard method == encryptionName else {
            throw OAuth2Error.store(
                "\(subject) is encrypted with \(OAuth2Error.sanitize(String(method.prefix(40)))), which this version of swift-oauth2 does not support"
            )
        }
        guard envelope.keyID == key.identifier else {
            throw OAuth2Error.store("\(subject) was encrypted with a different key than this store's; it cannot be decrypted")
        }
        guard let sealed = envelope.sealed, let combined = Data(base64Encoded: sealed), combined.count > 12 + 16 else {
            throw OAuth2Error.store("\(subject) is corrupt: its encrypted data is missing, damaged or truncated")
        }
        let plaintext: Data
        do {
            let box = try AES.GCM.SealedBox(combined: combined)
            let associated = authenticatedData(version: version, account: account, binding: headerBinding)
            plaintext = try AES.GCM.open(box, using: key.key, authenticating: associated)
        } catch {
            let what = version >= 2 ? " (its provider binding, its version or its encrypted data)" : ""
            throw OAuth2Error.store(
                "\(subject) failed decryption with this store's key: the file was altered\(what), or it was written for another account")
        }
        let token: AccessToken
        do {
            token = try decoder.decode(AccessToken.self, from: plaintext)
        } catch {
            throw OAuth2Error.store("\(subject) is corrupt: the decrypted token is not a valid token (\(fieldProblem(error)))")
        }
        if version >= 2 {
            try checkBinding(of: token, matches: headerBinding, subject: subject)
        }
        return token
    }

    /// The AES-GCM associated data of a file of `version` (see the type's documentation).
    static func authenticatedData(version: Int, account: String, binding: TokenBinding?) -> [UInt8] {
        guard version >= 2 else {
            return Array("\(formatName)/1\n".utf8) + Array(account.utf8)
        }
        var fields = ["\(formatName)/\(version)", account]
        if let binding {
            fields += [binding.tokenEndpoint, binding.clientID]
            // Only when present, so that a file without a resource is sealed as before.
            if let resource = binding.resource { fields.append(resource) }
        }
        var bytes: [UInt8] = []
        for field in fields {
            let utf8 = Array(field.utf8)
            let count = UInt64(utf8.count)
            bytes += (0..<8).reversed().map { UInt8(truncatingIfNeeded: count >> ($0 * 8)) }
            bytes += utf8
        }
        return bytes
    }

    /// Throws unless the token's binding is the envelope's: a file whose two
    /// disagree was edited by hand or damaged, and which one the client should
    /// trust cannot be told. The message names neither binding.
    private static func checkBinding(of token: AccessToken, matches headerBinding: TokenBinding?, subject: String) throws(OAuth2Error) {
        guard token.binding == headerBinding else {
            throw OAuth2Error.store("\(subject) is corrupt: the provider binding in its header does not match the token's own")
        }
    }

    /// Which field a decoding error is about; never a value, which could be a token.
    private static func fieldProblem(_ error: any Error) -> String {
        guard let error = error as? DecodingError else { return "it cannot be decoded" }
        let path: [any CodingKey]
        switch error {
        case .keyNotFound(let key, let context): path = context.codingPath + [key]
        case .typeMismatch(_, let context), .valueNotFound(_, let context), .dataCorrupted(let context): path = context.codingPath
        @unknown default: path = []
        }
        let field = path.map { $0.intValue.map(String.init) ?? $0.stringValue }.joined(separator: ".")
        return field.isEmpty
            ? "its contents are not a token" : "field \"\(OAuth2Error.sanitize(String(field.prefix(80))))\" is missing or invalid"
    }
}
