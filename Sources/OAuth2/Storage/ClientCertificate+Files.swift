#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

extension ClientCertificate {
    /// The largest certificate or key file read (a chain of a few certificates fits many times over).
    static let maxFileSize = 256 * 1024

    /// Reads a PEM certificate (chain) and its PEM private key from files.
    ///
    /// The key file gets the token store's checks: the path itself must not
    /// be a symbolic link, and it must be a regular file owned by the user
    /// running the process with no permission for group or others (0600 or
    /// 0400); otherwise this throws rather than use a key someone else could
    /// have read or planted. The certificate is public and only has to be
    /// readable. Both are read once, here.
    ///
    /// - Parameters:
    ///   - certificateFile: the PEM certificate, optionally followed by its intermediates.
    ///   - keyFile: the PEM private key (PKCS #8, PKCS #1 or SEC 1); may be the same file as `certificateFile`.
    ///   - keyPassword: the pass phrase of an encrypted key.
    /// - Throws: ``OAuth2Error`` `invalid_configuration` when a file cannot
    ///   be read, the key file fails a check, or a file holds no certificate
    ///   or no private key. Messages name the files, never their content.
    public init(certificateFile: String, keyFile: String, keyPassword: Secret? = nil) throws(OAuth2Error) {
        let key = try Self.readKeyFile(keyFile)
        let certificate = try Self.readFile(certificateFile, role: "client certificate file", flags: O_RDONLY | O_NONBLOCK)
        guard Self.firstCertificateDER(in: certificate) != nil else {
            throw OAuth2Error(
                code: .invalidConfiguration, message: "the client certificate file \(certificateFile) holds no PEM certificate")
        }
        guard let made = ClientCertificate(certificatePEM: certificate, privateKeyPEM: key, keyPassword: keyPassword) else {
            throw OAuth2Error(code: .invalidConfiguration, message: "the client key file \(keyFile) holds no PEM private key")
        }
        self = made
    }

    /// Wraps a PEM certificate (chain) and PEM private key held in memory.
    ///
    /// - Throws: ``OAuth2Error`` `invalid_configuration` when `certificatePEM`
    ///   holds no certificate or `privateKeyPEM` no private key; the message
    ///   shows neither.
    public init(certificatePEM: String, privateKeyPEM: Secret, keyPassword: Secret? = nil) throws(OAuth2Error) {
        guard Self.firstCertificateDER(in: Array(certificatePEM.utf8)) != nil else {
            throw OAuth2Error(code: .invalidConfiguration, message: "the client certificate is not a PEM certificate")
        }
        guard
            let made = ClientCertificate(
                certificatePEM: Array(certificatePEM.utf8), privateKeyPEM: Array(privateKeyPEM.value.utf8), keyPassword: keyPassword)
        else {
            throw OAuth2Error(code: .invalidConfiguration, message: "the client certificate's key is not a PEM private key")
        }
        self = made
    }

    /// The key file's bytes, after the store's checks on the open file (so
    /// the file checked is the file read).
    static func readKeyFile(_ path: String, role: String = "client key file") throws(OAuth2Error) -> [UInt8] {
        try readFile(path, role: role, flags: O_RDONLY | O_NOFOLLOW | O_NONBLOCK) { (status) throws(OAuth2Error) in
            do throws(OAuth2Error) {
                try status.requirePrivateRegularFile(
                    "the \(role) \(path)",
                    ownerAdvice: "refusing to use it",
                    modeAdvice: "refusing it (make it 0600 and consider the key exposed)"
                )
            } catch {
                // The store's rule, said as what it is here: the configuration's file, not the store's.
                throw OAuth2Error(code: .invalidConfiguration, message: error.message)
            }
        }
    }

    private static func readFile(
        _ path: String, role: String, flags: Int32,
        check: (StoreFileSystem.Status) throws(OAuth2Error) -> Void = { _ in }
    ) throws(OAuth2Error) -> [UInt8] {
        let fd: Int32
        do {
            fd = try StoreFileSystem.openFile(path, flags: flags)
        } catch {
            let reason = error.errno == ELOOP ? "it is a symbolic link" : error.reason
            throw OAuth2Error(code: .invalidConfiguration, message: "cannot open the \(role) \(path): \(reason)")
        }
        defer { StoreFileSystem.closeQuietly(fd) }
        do {
            let status = try StoreFileSystem.status(of: fd)
            try check(status)
            guard status.isRegularFile else {
                throw OAuth2Error(code: .invalidConfiguration, message: "the \(role) \(path) is not a regular file")
            }
            guard let bytes = try StoreFileSystem.readAll(fd, limit: maxFileSize) else {
                throw OAuth2Error(code: .invalidConfiguration, message: "the \(role) \(path) is over 256 KiB")
            }
            return bytes
        } catch let failure as StoreFileSystem.Failure {
            throw OAuth2Error(code: .invalidConfiguration, message: "cannot read the \(role) \(path): \(failure.reason)")
        } catch let error as OAuth2Error {
            throw error
        } catch {
            throw OAuth2Error(code: .invalidConfiguration, message: "cannot read the \(role) \(path)")
        }
    }
}
