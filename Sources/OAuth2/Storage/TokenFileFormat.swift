import Crypto

/// The contents of a ``FileTokenStore`` file: a small JSON envelope that says
/// what it holds, so plaintext and encrypted files are told apart and a later
/// format can be added without misreading an older one.
///
/// Version 1, plaintext:
///
///     {"format":"swift-oauth2-token","token":{...},"version":1}
///
/// Version 1, encrypted:
///
///     {"encryption":"AES-256-GCM","format":"swift-oauth2-token","keyID":"<16 hex>",
///      "sealed":"<base64 of nonce(12) ‖ ciphertext ‖ tag(16)>","version":1}
///
/// The token is ``AccessToken``'s Codable form with dates as seconds since
/// 1970 (a JSON number: a round trip is exact to within a microsecond).
/// The encrypted form seals that same JSON with a random 96-bit nonce; the
/// authenticated data is `"swift-oauth2-token/1\n"` followed by the account
/// name's UTF-8, so a file copied under another account's name does not open.
enum TokenFileFormat {
    static let formatName = "swift-oauth2-token"
    static let currentVersion = 1
    static let encryptionName = "AES-256-GCM"

    private struct Header: Decodable {
        var format: String?
        var version: Int?
    }

    private struct Envelope: Codable {
        var format: String
        var version: Int
        var token: AccessToken?
        var encryption: String?
        var keyID: String?
        var sealed: String?
    }

    /// The file's bytes for `token`, encrypted when `encryption` has a key.
    static func encode(_ token: AccessToken, account: String, encryption: FileTokenStore.Encryption) throws(OAuth2Error) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        encoder.dateEncodingStrategy = .secondsSince1970
        do {
            var envelope = Envelope(format: formatName, version: currentVersion)
            if let key = encryption.key {
                let plaintext = try encoder.encode(token)
                let box = try AES.GCM.seal(plaintext, using: key.key, authenticating: authenticatedData(account: account))
                guard let combined = box.combined else {
                    throw OAuth2Error.store("cannot encrypt the token of \(FileTokenStore.describe(account)): the sealed box has no combined form")
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

    /// The token in a file's bytes.
    ///
    /// - Parameter subject: how messages name the file ("the token file of account "x" (path)").
    /// - Throws: `store_error`, one distinct message per problem: damaged,
    ///   not a token file, unknown version, encrypted without a key, plaintext
    ///   where encryption is required, a different key, a failed authentication.
    static func decode(
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
            throw OAuth2Error.store("\(subject) is corrupt: it is not a JSON object (damaged or truncated); refusing to treat it as no token")
        }
        guard header.format == formatName else {
            throw OAuth2Error.store("\(subject) is not a swift-oauth2 token file (no \"format\": \"\(formatName)\")")
        }
        guard let version = header.version else {
            throw OAuth2Error.store("\(subject) is corrupt: it has no format version")
        }
        guard version == currentVersion else {
            throw OAuth2Error.store("\(subject) uses format version \(version), which this version of swift-oauth2 cannot read (it reads version \(currentVersion))")
        }

        let envelope: Envelope
        do {
            envelope = try decoder.decode(Envelope.self, from: data)
        } catch {
            throw OAuth2Error.store("\(subject) is corrupt: \(fieldProblem(error))")
        }

        guard let method = envelope.encryption else {
            guard encryption.acceptsPlaintextFiles else {
                throw OAuth2Error.store("\(subject) is not encrypted, and this store requires encryption; refusing a plaintext token file someone may have planted")
            }
            guard let token = envelope.token else {
                throw OAuth2Error.store("\(subject) is corrupt: it holds neither a token nor encrypted data")
            }
            return token
        }

        guard let key = encryption.key else {
            throw OAuth2Error.store("\(subject) is encrypted, and this store has no encryption key")
        }
        guard method == encryptionName else {
            throw OAuth2Error.store("\(subject) is encrypted with \(OAuth2Error.sanitize(String(method.prefix(40)))), which this version of swift-oauth2 does not support")
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
            plaintext = try AES.GCM.open(box, using: key.key, authenticating: authenticatedData(account: account))
        } catch {
            throw OAuth2Error.store("\(subject) failed decryption with this store's key: the file was altered, or it was written for another account")
        }
        do {
            return try decoder.decode(AccessToken.self, from: plaintext)
        } catch {
            throw OAuth2Error.store("\(subject) is corrupt: the decrypted token is not a valid token (\(fieldProblem(error)))")
        }
    }

    private static func authenticatedData(account: String) -> [UInt8] {
        Array("\(formatName)/\(currentVersion)\n".utf8) + Array(account.utf8)
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
        return field.isEmpty ? "its contents are not a token" : "field \"\(OAuth2Error.sanitize(String(field.prefix(80))))\" is missing or invalid"
    }
}
