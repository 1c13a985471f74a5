#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Reads a private key from a file with the token store's checks, for the
/// keys a configuration signs with (Sign in with Apple's `.p8` key, a
/// `private_key_jwt` key).
public enum PrivateKeyFile {
    /// The file's text, after the checks the token store makes of its own
    /// files: the path is not a symbolic link, and the file is a regular file
    /// owned by the user running the process, with no permission for group or
    /// others (0600 or 0400). A key someone else could have read or planted is
    /// refused, not used.
    ///
    /// - Throws: ``OAuth2Error`` `invalid_configuration` when the file cannot
    ///   be read, fails a check, is over 256 KiB or is not UTF-8. Messages name
    ///   the file, never its content.
    public static func read(_ path: String) throws(OAuth2Error) -> Secret {
        let bytes = try ClientCertificate.readKeyFile(path, role: "private key file")
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw OAuth2Error(code: .invalidConfiguration, message: "the private key file \(path) is not UTF-8 text")
        }
        return Secret.opaque(text)
    }
}
