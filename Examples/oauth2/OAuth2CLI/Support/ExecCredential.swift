import OAuth2

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A Kubernetes `ExecCredential` (client.authentication.k8s.io/v1), the
/// answer of an exec credential plugin.
struct ExecCredential: Encodable {
    static let v1 = "client.authentication.k8s.io/v1"
    static let v1beta1 = "client.authentication.k8s.io/v1beta1"

    struct Status: Encodable {
        let token: String
        let expirationTimestamp: String?
    }

    let apiVersion: String
    let kind = "ExecCredential"
    let status: Status

    init(_ token: AccessToken, apiVersion: String = Self.v1) {
        self.apiVersion = apiVersion
        // RFC 3339 in UTC, whole seconds: 2025-01-02T03:04:05Z.
        status = Status(token: token.accessToken.value, expirationTimestamp: token.expiresAt.map { $0.formatted(.iso8601) })
    }

    /// The version kubectl asks for in KUBERNETES_EXEC_INFO (an
    /// ExecCredential whose apiVersion is the one it wants back): v1beta1 when
    /// it says so, else v1.
    static func requestedAPIVersion() -> String {
        struct Info: Decodable { let apiVersion: String? }
        guard let text = EnvironmentVariables.value("KUBERNETES_EXEC_INFO"),
            let info = try? JSONDecoder().decode(Info.self, from: Data(text.utf8)),
            info.apiVersion == v1beta1
        else { return v1 }
        return v1beta1
    }

    /// One JSON object on one line; no expirationTimestamp when unknown.
    func json() throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(self), as: UTF8.self)
    }
}
