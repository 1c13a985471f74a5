#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

import Crypto

/// A TLS client certificate (or chain) and its private key: what a request
/// presents for mutual TLS (RFC 8705), as ``HTTPTransportRequest/clientCertificate``.
///
/// Made from PEM files with ``init(certificateFile:keyFile:keyPassword:)``
/// (the key file held to the token store's rules: a regular file of this
/// user, no permission for group or others) or from PEM text with
/// ``init(certificatePEM:privateKeyPEM:keyPassword:)``. ``CurlTransport``
/// gives libcurl the bytes read here, never the paths, so a file swapped
/// after the checks is never used.
///
/// Two values are equal when they hold the same certificate, key and
/// password. Its `description`, `dump` and every error show only the
/// certificate's ``thumbprint``, never the key or the PEM.
public struct ClientCertificate: Sendable, Hashable {
    /// The bytes, behind a reference: a transfer's options compare them on
    /// every request, and the same value is usually the same box.
    let storage: Storage
    /// The SHA-256 thumbprint of the (first) certificate's DER encoding,
    /// base64url without padding: RFC 8705 §3.1's `x5t#S256`, the `cnf`
    /// claim of a token bound to this certificate.
    public var thumbprint: String { storage.thumbprint }

    /// The PEM text of the certificate chain, as given.
    var certificatePEM: [UInt8] { storage.certificatePEM }
    /// The PEM text of the private key, as given.
    var privateKeyPEM: [UInt8] { storage.privateKeyPEM }
    /// The key's pass phrase, when it is encrypted.
    var keyPassword: Secret? { storage.keyPassword }

    /// Wraps checked PEM bytes; `nil` when `certificatePEM` holds no
    /// certificate or `privateKeyPEM` no private key.
    package init?(certificatePEM: [UInt8], privateKeyPEM: [UInt8], keyPassword: Secret?) {
        guard let der = Self.firstCertificateDER(in: certificatePEM), Self.containsPrivateKey(privateKeyPEM) else {
            return nil
        }
        storage = Storage(
            certificatePEM: certificatePEM, privateKeyPEM: privateKeyPEM, keyPassword: keyPassword,
            thumbprint: Self.thumbprint(ofDER: der))
    }

    /// RFC 8705 §3.1: base64url(SHA-256(DER of the certificate)).
    package static func thumbprint(ofDER der: some Sequence<UInt8>) -> String {
        Base64URL.encode(SHA256.hash(data: Array(der)))
    }

    /// The DER bytes of the first `CERTIFICATE` block of a PEM text, or `nil` when there is none.
    package static func firstCertificateDER(in pem: [UInt8]) -> [UInt8]? {
        guard let start = pem.firstRange(of: Array("-----BEGIN CERTIFICATE-----".utf8)),
            let stop = pem[start.upperBound...].firstRange(of: Array("-----END CERTIFICATE-----".utf8))
        else {
            return nil
        }
        let body = pem[start.upperBound..<stop.lowerBound].filter { $0 > 0x20 }
        // A DER certificate is a SEQUENCE: anything else is not one, whatever its armour says.
        guard let der = Data(base64Encoded: Data(body)), der.first == 0x30 else { return nil }
        return Array(der)
    }

    /// Whether a PEM text has a private key block (PKCS #8, encrypted PKCS #8, PKCS #1 RSA or SEC 1 EC).
    static func containsPrivateKey(_ pem: [UInt8]) -> Bool {
        [
            "-----BEGIN PRIVATE KEY-----", "-----BEGIN ENCRYPTED PRIVATE KEY-----", "-----BEGIN RSA PRIVATE KEY-----",
            "-----BEGIN EC PRIVATE KEY-----",
        ].contains { pem.firstRange(of: Array($0.utf8)) != nil }
    }

    public static func == (lhs: ClientCertificate, rhs: ClientCertificate) -> Bool {
        lhs.storage === rhs.storage
            || (lhs.thumbprint == rhs.thumbprint && lhs.certificatePEM == rhs.certificatePEM
                && lhs.privateKeyPEM == rhs.privateKeyPEM && lhs.keyPassword == rhs.keyPassword)
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(thumbprint)
    }

    /// The bytes of one certificate and key. Immutable, hence `Sendable`.
    final class Storage: Sendable {
        let certificatePEM: [UInt8]
        let privateKeyPEM: [UInt8]
        let keyPassword: Secret?
        let thumbprint: String

        init(certificatePEM: [UInt8], privateKeyPEM: [UInt8], keyPassword: Secret?, thumbprint: String) {
            self.certificatePEM = certificatePEM
            self.privateKeyPEM = privateKeyPEM
            self.keyPassword = keyPassword
            self.thumbprint = thumbprint
        }
    }
}

extension ClientCertificate: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// `ClientCertificate(x5t#S256 …)`: the thumbprint only.
    public var description: String { "ClientCertificate(x5t#S256 \(thumbprint))" }
    public var debugDescription: String { description }
    /// What `dump` and debuggers show: the thumbprint, never the key.
    public var customMirror: Mirror {
        Mirror(self, children: ["thumbprint": thumbprint], displayStyle: .struct)
    }
}
