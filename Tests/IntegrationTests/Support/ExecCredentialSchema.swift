import Foundation

/// The JSON schema of a Kubernetes ExecCredential as an exec credential
/// plugin returns it, written from the API definition
/// (k8s.io/client-go/pkg/apis/clientauthentication/v1, types.go:
/// ExecCredential{TypeMeta; Spec ExecCredentialSpec; Status *ExecCredentialStatus},
/// ExecCredentialStatus{ExpirationTimestamp *metav1.Time `json:"expirationTimestamp,omitempty"`;
/// Token string `json:"token,omitempty" datapolicy:"token"`; ClientCertificateData; ClientKeyData}),
/// metav1.Time serialized as RFC 3339 date-time) and a validator for the
/// subset of JSON Schema it uses (type, const, enum, required, properties,
/// additionalProperties false, minLength, format date-time).
enum ExecCredentialSchema {
    static let text = """
        {
          "$schema": "https://json-schema.org/draft/2020-12/schema",
          "title": "ExecCredential (client.authentication.k8s.io/v1), as a plugin returns it",
          "type": "object",
          "required": ["apiVersion", "kind", "status"],
          "additionalProperties": false,
          "properties": {
            "apiVersion": {"type": "string", "enum": ["client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1"]},
            "kind": {"type": "string", "const": "ExecCredential"},
            "spec": {
              "type": "object",
              "additionalProperties": false,
              "properties": {
                "cluster": {"type": "object"},
                "interactive": {"type": "boolean"}
              }
            },
            "status": {
              "type": "object",
              "required": ["token"],
              "additionalProperties": false,
              "properties": {
                "token": {"type": "string", "minLength": 1},
                "expirationTimestamp": {"type": "string", "format": "date-time"},
                "clientCertificateData": {"type": "string"},
                "clientKeyData": {"type": "string"}
              }
            }
          }
        }
        """

    static var schema: [String: Any] {
        // The literal above is valid JSON; a failure here is the test's own bug.
        (try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]) ?? [:]
    }

    /// What in `value` the schema does not allow, one line each; empty when it is valid.
    static func violations(of value: Any) -> [String] {
        validate(value, against: schema, at: "$")
    }

    private static func validate(_ value: Any, against schema: [String: Any], at path: String) -> [String] {
        var problems: [String] = []
        if let type = schema["type"] as? String, !has(type: type, value) {
            return ["\(path): not of type \(type)"]
        }
        if let constant = schema["const"] as? String, value as? String != constant {
            problems.append("\(path): is not \(constant)")
        }
        if let allowed = schema["enum"] as? [String], !allowed.contains(value as? String ?? "") {
            problems.append("\(path): is not one of \(allowed)")
        }
        if let minimum = schema["minLength"] as? Int, let string = value as? String, string.count < minimum {
            problems.append("\(path): is shorter than \(minimum)")
        }
        if schema["format"] as? String == "date-time", let string = value as? String, !isRFC3339DateTime(string) {
            problems.append("\(path): \(string) is not an RFC 3339 date-time")
        }
        if let object = value as? [String: Any] {
            let properties = schema["properties"] as? [String: [String: Any]] ?? [:]
            for name in schema["required"] as? [String] ?? [] where object[name] == nil {
                problems.append("\(path): lacks \(name)")
            }
            for (name, member) in object {
                if let property = properties[name] {
                    problems += validate(member, against: property, at: path + "." + name)
                } else if schema["additionalProperties"] as? Bool == false {
                    problems.append("\(path): has the unknown member \(name)")
                }
            }
        }
        return problems
    }

    private static func has(type: String, _ value: Any) -> Bool {
        switch type {
        case "object": value is [String: Any]
        case "string": value is String
        case "boolean": value is Bool
        default: true
        }
    }

    /// RFC 3339 §5.6 date-time: 2025-01-02T03:04:05Z, fractions and offsets allowed.
    static func isRFC3339DateTime(_ text: String) -> Bool {
        text.range(
            of:
                #"^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])[Tt]([01]\d|2[0-3]):[0-5]\d:([0-5]\d|60)(\.\d+)?([Zz]|[+-]([01]\d|2[0-3]):[0-5]\d)$"#,
            options: .regularExpression) != nil
    }
}
