import Foundation
import OAuth2

/// The token store's file reader (`TokenFileFormat.decode`) on arbitrary bytes.
///
/// The corpus holds files sealed with this target's fixed key (made with
/// Python's `cryptography`, following the format's documentation), so the
/// fuzzer mutates real files. Checked: no crash, and every failure is
/// `store_error`; under the key, with plaintext files refused, a token
/// comes only from an envelope that says AES-256-GCM, carries the binding
/// the token has (version 2), and does not read under another account's
/// name: what the reader accepts is what the writer sealed for this
/// account, whatever else the fuzzer changed. A plaintext file that reads
/// as a token is written again, plain and encrypted, and reads back as the
/// same token.
enum StoreFileTarget {
    private static let account = "fuzz-account"
    // A fixed key: the property is about the reader, not about keeping the key secret.
    private static let key = try! FileTokenStore.EncryptionKey(bytes: (0..<32).map { UInt8($0) &* 7 &+ 3 })

    static func run(_ bytes: UnsafeRawBufferPointer) {
        let file = Array(bytes)
        if let token = read(file, encryption: .aesGCM(key)) {
            checkSealed(file, token: token)
        }
        guard let token = read(file, encryption: .plaintext) else { return }
        for (encryption, encrypts) in [(FileTokenStore.Encryption.plaintext, false), (.aesGCM(key), true)] {
            let written: [UInt8]
            do throws(OAuth2Error) {
                written = try TokenFileFormat.encode(token, account: account, encryption: encryption)
            } catch {
                violation("a token read from a file cannot be written again: \(error.code)")
            }
            guard read(written, encryption: encryption) == token else { violation("a token written again reads back different") }
            if encrypts, read(written, encryption: encryption, account: account + "-other") != nil {
                violation("an encrypted file reads under another account's name")
            }
        }
    }

    private static func checkSealed(_ file: [UInt8], token: AccessToken) {
        guard let envelope = (try? JSONSerialization.jsonObject(with: Data(file))) as? [String: Any],
            envelope["encryption"] as? String == "AES-256-GCM"
        else {
            violation("a token from a file that is not an AES-256-GCM envelope, read under a key with plaintext refused")
        }
        if (envelope["version"] as? NSNumber)?.intValue == 2 {
            let binding = envelope["binding"] as? [String: Any]
            guard binding?["tokenEndpoint"] as? String == token.binding?.tokenEndpoint,
                binding?["clientID"] as? String == token.binding?.clientID
            else {
                violation("a decrypted token whose binding is not the envelope's")
            }
        }
        if read(file, encryption: .aesGCM(key), account: account + "-other") != nil {
            violation("a sealed file reads under another account's name")
        }
    }

    /// The token in the file, or `nil`; any failure but `store_error` is a finding.
    private static func read(_ file: [UInt8], encryption: FileTokenStore.Encryption, account: String = account) -> AccessToken? {
        do throws(OAuth2Error) {
            return try TokenFileFormat.decode(file, account: account, encryption: encryption, subject: "the fuzzed file")
        } catch {
            guard error.code == .storeError else { violation("the reader failed with \(error.code), not store_error") }
            return nil
        }
    }
}
