import Foundation
import Testing

/// The home-made validator behind ``ExecCredentialSchema``: it accepts what an
/// exec credential plugin may answer and names what is wrong in what it may
/// not. Without the refusals, a validator that accepted anything would let
/// the kubernetes tests pass whatever the CLI printed.
struct ExecCredentialSchemaTests {
    static func violations(_ json: String) throws -> [String] {
        ExecCredentialSchema.violations(of: try JSONSerialization.jsonObject(with: Data(json.utf8)))
    }

    @Test(arguments: [
        #"{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"expirationTimestamp":"2025-01-02T03:04:05Z","token":"abc"}}"#,
        #"{"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential","status":{"token":"abc"}}"#,
        #"{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","spec":{"interactive":false},"status":{"token":"abc","expirationTimestamp":"2025-01-02T03:04:05.25+02:00"}}"#,
    ])
    func aDocumentAPluginMayAnswerHasNoViolations(document: String) throws {
        #expect(try Self.violations(document) == [])
    }

    @Test(arguments: [
        // status.token: missing, empty, not a string.
        (
            #"{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"expirationTimestamp":"2025-01-02T03:04:05Z"}}"#,
            "$.status: lacks token"
        ),
        (
            #"{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":""}}"#,
            "$.status.token: is shorter than 1"
        ),
        (
            #"{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":42}}"#,
            "$.status.token: not of type string"
        ),
        (#"{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential"}"#, "$: lacks status"),
        // kind and apiVersion.
        (#"{"apiVersion":"client.authentication.k8s.io/v1","kind":"Status","status":{"token":"abc"}}"#, "$.kind: is not ExecCredential"),
        (#"{"apiVersion":"client.authentication.k8s.io/v1","status":{"token":"abc"}}"#, "$: lacks kind"),
        (
            #"{"apiVersion":"client.authentication.k8s.io/v1alpha1","kind":"ExecCredential","status":{"token":"abc"}}"#,
            #"$.apiVersion: is not one of ["client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1"]"#
        ),
        (
            #"{"apiVersion":"v1","kind":"ExecCredential","status":{"token":"abc"}}"#,
            #"$.apiVersion: is not one of ["client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1"]"#
        ),
        // expirationTimestamp: RFC 3339 only.
        (
            #"{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"abc","expirationTimestamp":"2025-01-02 03:04:05Z"}}"#,
            "$.status.expirationTimestamp: 2025-01-02 03:04:05Z is not an RFC 3339 date-time"
        ),
        (
            #"{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"abc","expirationTimestamp":"2025-01-02T03:04:05"}}"#,
            "$.status.expirationTimestamp: 2025-01-02T03:04:05 is not an RFC 3339 date-time"
        ),
        (
            #"{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"abc","expirationTimestamp":"2025-13-02T03:04:05Z"}}"#,
            "$.status.expirationTimestamp: 2025-13-02T03:04:05Z is not an RFC 3339 date-time"
        ),
        (
            #"{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"abc","expirationTimestamp":"1735787045"}}"#,
            "$.status.expirationTimestamp: 1735787045 is not an RFC 3339 date-time"
        ),
        (
            #"{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"abc","expirationTimestamp":1735787045}}"#,
            "$.status.expirationTimestamp: not of type string"
        ),
        // Members the API does not have.
        (
            #"{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"abc","access_token":"abc"}}"#,
            "$.status: has the unknown member access_token"
        ),
        (#"["ExecCredential"]"#, "$: not of type object"),
    ])
    func aWrongDocumentIsRefusedForWhatIsWrong(document: String, violation: String) throws {
        #expect(try Self.violations(document) == [violation])
    }
}
