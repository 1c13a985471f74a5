#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The environment variables the CLI reads; a flag always wins over its variable.
enum EnvironmentVariables {
    /// The value of `name`, or `nil` when it is unset or empty.
    static func value(_ name: String) -> String? {
        guard let raw = getenv(name) else { return nil }
        let value = String(cString: raw)
        return value.isEmpty ? nil : value
    }

    /// Whether `name` holds a true value (`1`, `true`, `yes`, `on`).
    static func isTrue(_ name: String) -> Bool {
        guard let value = value(name)?.lowercased() else { return false }
        return ["1", "true", "yes", "on"].contains(value)
    }
}
