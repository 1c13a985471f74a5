#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension FileTokenStore {
    /// Whether a ``FileTokenStore`` encrypts its files, and with which key.
    ///
    /// Each file says whether it is encrypted, so a mismatch is reported
    /// rather than guessed at: a store opened with ``plaintext`` refuses an
    /// encrypted file ("no key"), and a store opened with ``aesGCM(_:acceptingPlaintextFiles:)``
    /// refuses a plaintext file unless told to accept it.
    public struct Encryption: Sendable {
        enum Mode: Sendable {
            case plaintext
            case aesGCM(EncryptionKey, acceptsPlaintextFiles: Bool)
        }

        let mode: Mode

        /// Files are written as plain JSON, protected by their 0600 mode only; encrypted files are refused.
        public static let plaintext = Encryption(mode: .plaintext)

        /// Files are written encrypted with AES-256-GCM under `key`, the account
        /// name and the token's ``TokenBinding`` bound as authenticated data.
        ///
        /// - Parameters:
        ///   - key: the 256-bit key.
        ///   - acceptingPlaintextFiles: `false` (the default) refuses a
        ///     plaintext file, which an attacker who can write the directory could
        ///     have planted; `true` reads one, for moving an existing store to
        ///     encryption: each account's file is encrypted when it is next saved.
        public static func aesGCM(_ key: EncryptionKey, acceptingPlaintextFiles: Bool = false) -> Encryption {
            Encryption(mode: .aesGCM(key, acceptsPlaintextFiles: acceptingPlaintextFiles))
        }

        /// The key, when files are encrypted.
        var key: EncryptionKey? {
            switch mode {
            case .plaintext: nil
            case .aesGCM(let key, _): key
            }
        }

        /// Whether a plaintext file may be read.
        var acceptsPlaintextFiles: Bool {
            switch mode {
            case .plaintext: true
            case .aesGCM(_, let accepts): accepts
            }
        }
    }
}
