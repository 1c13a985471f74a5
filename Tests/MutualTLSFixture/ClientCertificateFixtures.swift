import Foundation
import OAuth2

/// Two throw-away self-signed P-256 client certificates and their keys, made
/// for these tests with `openssl req -x509 -newkey ec`, and their RFC 8705
/// thumbprints as openssl computes them
/// (`openssl x509 -outform DER | openssl dgst -sha256 -binary`, base64url).
/// Unlike ``MutualTLSServer``'s, these never change, for tests that need no
/// server or compare with a fixed thumbprint.
public enum ClientCertificateFixtures {
    /// The first certificate, PEM.
    public static let firstPEM = """
        -----BEGIN CERTIFICATE-----
        MIIBnTCCAUOgAwIBAgIUGGaio9GM8ZGqHyMztJgJomUlDyQwCgYIKoZIzj0EAwIw
        IzEhMB8GA1UEAwwYc3dpZnQtb2F1dGgyLXRlc3QtY2xpZW50MCAXDTI2MTEyODE1
        MDEwMVoYDzIxMjYxMTA0MTUwMTAxWjAjMSEwHwYDVQQDDBhzd2lmdC1vYXV0aDIt
        dGVzdC1jbGllbnQwWTATBgcqhkjOPQIBBggqhkjOPQMBBwNCAAQXfRE+smXqpDRo
        eaJGSptHsR/8SM4hfNQ2wqRcQNQDlUnDIgaJ996/5AoUzDnCNDMxS/zKpL1xHQnE
        Cx4gh6Q2o1MwUTAdBgNVHQ4EFgQUpFRGWyf5SywyiBXVx5HHhPu6tw0wHwYDVR0j
        BBgwFoAUpFRGWyf5SywyiBXVx5HHhPu6tw0wDwYDVR0TAQH/BAUwAwEB/zAKBggq
        hkjOPQQDAgNIADBFAiEAqIQMc0v8uCs5S8hykQKWVufsHEMkQA/Jb060oXLzta4C
        ICt6D0zGCPpYgJd3rvXjlTARnB0+NQVMA10qA/Q3q6Cj
        -----END CERTIFICATE-----

        """
    /// A line of the first key, to show that no text contains it.
    public static let firstKeyBody = "MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg7S/PMxZJj6roNAU8"
    /// The first certificate's private key, PEM.
    public static let firstKeyPEM = """
        -----BEGIN PRIVATE KEY-----
        \(firstKeyBody)
        hlSE1uAbMYPgMkDgCJbcY3MatAGhRANCAAQXfRE+smXqpDRoeaJGSptHsR/8SM4h
        fNQ2wqRcQNQDlUnDIgaJ996/5AoUzDnCNDMxS/zKpL1xHQnECx4gh6Q2
        -----END PRIVATE KEY-----

        """
    /// The first certificate's RFC 8705 thumbprint (`x5t#S256`).
    public static let firstThumbprint = "-HaANlhcLZFjIJ3avcuF53xiH0B0-g8BqIhPsw8BkvA"

    /// The second certificate, PEM.
    public static let secondPEM = """
        -----BEGIN CERTIFICATE-----
        MIIBoDCCAUegAwIBAgIUEz+ogrj4/NM+Syfws9+EMRAEfnQwCgYIKoZIzj0EAwIw
        JTEjMCEGA1UEAwwac3dpZnQtb2F1dGgyLXRlc3QtY2xpZW50LTIwIBcNMjYxMTI4
        MTUwNzA1WhgPMjEyNjExMDQxNTA3MDVaMCUxIzAhBgNVBAMMGnN3aWZ0LW9hdXRo
        Mi10ZXN0LWNsaWVudC0yMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEZJ2S0hw9
        9QkkX/8f5pF6cAwVz6anlXqW0USDkgO3VrhRX/IoIv7+YGPrzMS3v2sjteWvcPu0
        ZJccSdJIrl6R86NTMFEwHQYDVR0OBBYEFBXM7qsBOF8r8yx7pOqAc4D6ltULMB8G
        A1UdIwQYMBaAFBXM7qsBOF8r8yx7pOqAc4D6ltULMA8GA1UdEwEB/wQFMAMBAf8w
        CgYIKoZIzj0EAwIDRwAwRAIgPV/8sAI+D7ahYSxgqjYD2E2suA5txh0X4+9XLSF+
        tg8CIAIY7n2a0OqtT7gblsAOpPRYJodcdYwGPM+PxCuk/Vgc
        -----END CERTIFICATE-----

        """
    /// The second certificate's private key, PEM.
    public static let secondKeyPEM = """
        -----BEGIN PRIVATE KEY-----
        MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgg/l9usauMD2vW7O6
        9lHtdFTVaazqw1rtbjt2m86q676hRANCAARknZLSHD31CSRf/x/mkXpwDBXPpqeV
        epbRRIOSA7dWuFFf8igi/v5gY+vMxLe/ayO15a9w+7RklxxJ0kiuXpHz
        -----END PRIVATE KEY-----

        """
    /// The second certificate's RFC 8705 thumbprint (`x5t#S256`).
    public static let secondThumbprint = "KlYTI6o1QyupV_dB7yRLR2CfHA08iKYKzSaEQSriS3I"

    /// The first certificate with its key.
    public static var first: ClientCertificate {
        get throws { try ClientCertificate(certificatePEM: firstPEM, privateKeyPEM: Secret(firstKeyPEM)) }
    }

    /// The second certificate with its key.
    public static var second: ClientCertificate {
        get throws { try ClientCertificate(certificatePEM: secondPEM, privateKeyPEM: Secret(secondKeyPEM)) }
    }
}
