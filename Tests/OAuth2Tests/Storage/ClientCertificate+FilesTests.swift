import Foundation
import MutualTLSFixture
import Testing
@testable import OAuth2

#if canImport(Glibc)
import Glibc
#endif

/// A client certificate's files: the key file held to the token store's
/// rules, the PEM checked, nothing of the key in any error or description.
@Suite struct ClientCertificateFilesTests {
    static let certificatePEM = ClientCertificateFixtures.firstPEM
    static let keyPEM = ClientCertificateFixtures.firstKeyPEM
    static let keyBody = ClientCertificateFixtures.firstKeyBody
    static let thumbprint = ClientCertificateFixtures.firstThumbprint

    /// The two files in a scratch directory, the key with `keyMode`.
    private func files(keyMode: mode_t = 0o600) throws -> (ScratchDirectory, certificate: String, key: String) {
        let scratch = try ScratchDirectory()
        let certificate = scratch.path + "/client.pem"
        let key = scratch.path + "/client.key"
        try Self.certificatePEM.write(toFile: certificate, atomically: false, encoding: .utf8)
        try Self.keyPEM.write(toFile: key, atomically: false, encoding: .utf8)
        #expect(chmod(key, keyMode) == 0)
        return (scratch, certificate, key)
    }

    private func loadingError(certificate: String, key: String) -> OAuth2Error? {
        do {
            _ = try ClientCertificate(certificateFile: certificate, keyFile: key)
            return nil
        } catch {
            return error
        }
    }

    @Test func readsTheFilesAndComputesTheRFC8705Thumbprint() throws {
        let (scratch, certificate, key) = try files()
        let loaded = try ClientCertificate(certificateFile: certificate, keyFile: key)
        #expect(loaded.thumbprint == Self.thumbprint)
        #expect(loaded.certificatePEM == Array(Self.certificatePEM.utf8))
        #expect(loaded.privateKeyPEM == Array(Self.keyPEM.utf8))
        _ = scratch
    }

    @Test func aKeyFileOpenToOthersIsRefused() throws {
        for mode: mode_t in [0o640, 0o604, 0o660, 0o644] {
            let (scratch, certificate, key) = try files(keyMode: mode)
            let error = loadingError(certificate: certificate, key: key)
            #expect(error?.code == .invalidConfiguration)
            #expect(error?.message.contains("group or others") == true)
            #expect(error?.message.contains(Self.keyBody) == false)
            _ = scratch
        }
    }

    @Test func aKeyFileReadableByItsOwnerOnlyIsAccepted() throws {
        let (scratch, certificate, key) = try files(keyMode: 0o400)
        #expect(loadingError(certificate: certificate, key: key) == nil)
        _ = scratch
    }

    @Test func aKeyFileOfAnotherUserIsRefused() throws {
        try #require(geteuid() == 0, "only root can give a file to another user")
        let (scratch, certificate, key) = try files()
        #expect(chown(key, FileTokenStorePermissionTests.otherUser, FileTokenStorePermissionTests.otherUser) == 0)
        let error = loadingError(certificate: certificate, key: key)
        #expect(error?.code == .invalidConfiguration)
        #expect(error?.message.contains("owned by uid") == true)
        _ = scratch
    }

    @Test func aKeyFileThatIsASymbolicLinkIsRefused() throws {
        let (scratch, certificate, key) = try files()
        let link = scratch.path + "/link.key"
        #expect(symlink(key, link) == 0)
        let error = loadingError(certificate: certificate, key: link)
        #expect(error?.code == .invalidConfiguration)
        #expect(error?.message.contains("symbolic link") == true)
    }

    @Test func aKeyPathThatIsADirectoryIsRefused() throws {
        let (scratch, certificate, _) = try files()
        let directory = scratch.path + "/dir"
        #expect(mkdir(directory, 0o700) == 0)
        let error = loadingError(certificate: certificate, key: directory)
        #expect(error?.code == .invalidConfiguration)
        #expect(error?.message.contains("not a regular file") == true)
    }

    @Test func aMissingFileIsATypedError() throws {
        let (scratch, certificate, key) = try files()
        #expect(loadingError(certificate: certificate, key: scratch.path + "/none.key")?.code == .invalidConfiguration)
        #expect(loadingError(certificate: scratch.path + "/none.pem", key: key)?.code == .invalidConfiguration)
    }

    @Test func filesWithoutACertificateOrAKeyAreRefusedWithoutShowingThem() throws {
        let (scratch, certificate, key) = try files()
        // The files swapped: the "certificate" holds a key, the "key" a certificate.
        let swapped = loadingError(certificate: key, key: certificate)
        #expect(swapped?.code == .invalidConfiguration)
        #expect(swapped?.message.contains(Self.keyBody) == false)
        // A certificate given as the key (private, so the key file's checks pass).
        #expect(chmod(certificate, 0o600) == 0)
        let bothKey = loadingError(certificate: certificate, key: certificate)
        #expect(bothKey?.code == .invalidConfiguration)
        #expect(bothKey?.message.contains("no PEM private key") == true)
        _ = scratch
    }

    @Test func oneFileMayHoldBothTheCertificateAndTheKey() throws {
        let scratch = try ScratchDirectory()
        let both = scratch.path + "/both.pem"
        try (Self.certificatePEM + Self.keyPEM).write(toFile: both, atomically: false, encoding: .utf8)
        #expect(chmod(both, 0o600) == 0)
        #expect(try ClientCertificate(certificateFile: both, keyFile: both).thumbprint == Self.thumbprint)
    }

    @Test func pemInMemoryIsCheckedToo() throws {
        let made = try ClientCertificate(certificatePEM: Self.certificatePEM, privateKeyPEM: Secret(Self.keyPEM))
        #expect(made.thumbprint == Self.thumbprint)
        #expect(throws: OAuth2Error.self) {
            try ClientCertificate(
                certificatePEM: "-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----", privateKeyPEM: Secret(Self.keyPEM))
        }
        #expect(throws: OAuth2Error.self) {
            try ClientCertificate(certificatePEM: Self.certificatePEM, privateKeyPEM: Secret("no key here"))
        }
    }

    @Test func descriptionsShowTheThumbprintOnly() throws {
        let made = try ClientCertificate(certificatePEM: Self.certificatePEM, privateKeyPEM: Secret(Self.keyPEM))
        var dumped = ""
        dump(made, to: &dumped)
        for text in [made.description, String(reflecting: made), dumped, "\(made)"] {
            #expect(text.contains(Self.thumbprint))
            #expect(!text.contains(Self.keyBody))
            #expect(!text.contains("MIIBnTCC"))
        }
    }
}
