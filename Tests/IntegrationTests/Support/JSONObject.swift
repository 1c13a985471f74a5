import Foundation

/// A JSON object printed by the CLI or answered by the provider, for assertions.
struct JSONObject {
    let fields: [String: Any]

    init(_ text: String) throws {
        guard let object = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] else {
            throw ProviderError(description: "not a JSON object: \(text.prefix(200))")
        }
        fields = object
    }

    subscript(_ key: String) -> Any? { fields[key] }

    func string(_ key: String) -> String? { fields[key] as? String }

    func bool(_ key: String) -> Bool? { fields[key] as? Bool }
}
