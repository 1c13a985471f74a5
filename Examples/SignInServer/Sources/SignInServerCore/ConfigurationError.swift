/// Why the app refuses to start: variables that are missing or unusable.
///
/// Its ``description`` names the variables and what is wrong with each; it
/// never repeats a value, since some of them (the client secret, the store
/// key) are secrets.
public struct ConfigurationError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The required variables that are unset or empty.
    public var missing: [String]
    /// The variables that are set but unusable, each with the reason.
    public var invalid: [(variable: String, reason: String)]

    /// Creates an error.
    public init(missing: [String] = [], invalid: [(variable: String, reason: String)] = []) {
        self.missing = missing
        self.invalid = invalid
    }

    /// Whether anything is wrong.
    var isEmpty: Bool { missing.isEmpty && invalid.isEmpty }

    /// One line per problem, for the terminal.
    public var description: String {
        var lines: [String] = []
        if !missing.isEmpty {
            lines.append("missing environment variable\(missing.count == 1 ? "" : "s"): \(missing.joined(separator: ", "))")
        }
        for (variable, reason) in invalid {
            lines.append("\(variable): \(reason)")
        }
        return lines.joined(separator: "\n")
    }

    /// Compares the problems, in order.
    public static func == (lhs: ConfigurationError, rhs: ConfigurationError) -> Bool {
        lhs.missing == rhs.missing
            && lhs.invalid.map(\.variable) == rhs.invalid.map(\.variable)
            && lhs.invalid.map(\.reason) == rhs.invalid.map(\.reason)
    }
}
