import Foundation
import OAuth2
import OAuth2Postgres

/// Collects the variables and every problem with them.
struct EnvironmentReader {
    let environment: [String: String]
    var error = ConfigurationError()

    init(_ environment: [String: String]) {
        self.environment = environment
    }

    mutating func invalid(_ variable: String, _ reason: String) {
        error.invalid.append((variable, reason))
    }

    func optional(_ name: String) -> String? {
        guard let value = environment[name]?.trimmingCharacters(in: .whitespacesAndNewlines), !value.isEmpty else {
            return nil
        }
        return value
    }

    mutating func required(_ name: String) -> String? {
        guard let value = optional(name) else {
            error.missing.append(name)
            return nil
        }
        return value
    }

    mutating func url(_ name: String, required: Bool) -> URL? {
        guard let text = required ? self.required(name) : optional(name) else { return nil }
        guard let url = URL(string: text),
            let scheme = url.scheme?.lowercased(), scheme == "https" || scheme == "http",
            let host = url.host, !host.isEmpty
        else {
            invalid(name, "not an absolute http or https URL")
            return nil
        }
        return url
    }

    mutating func integer(_ name: String, range: ClosedRange<Int>) -> Int? {
        guard let text = optional(name) else { return nil }
        guard let value = Int(text), range.contains(value) else {
            invalid(name, "must be a whole number from \(range.lowerBound) to \(range.upperBound)")
            return nil
        }
        return value
    }

    mutating func flag(_ name: String) -> Bool {
        switch optional(name)?.lowercased() {
        case nil, "0", "false", "no": return false
        case "1", "true", "yes": return true
        default:
            invalid(name, "must be 1 or 0")
            return false
        }
    }

    /// `SIGNIN_STORE_DIR`: required without a database, refused with one
    /// (the tokens would not be where the operator thinks).
    mutating func storeDirectory(withDatabase: Bool) -> String? {
        guard withDatabase else { return required("SIGNIN_STORE_DIR") }
        if optional("SIGNIN_STORE_DIR") != nil {
            invalid("SIGNIN_STORE_DIR", "set SIGNIN_STORE_DIR or SIGNIN_DATABASE_URL, not both")
        }
        return nil
    }

    /// The database of `SIGNIN_DATABASE_URL`, its password and tables; `nil` when unset or unusable.
    mutating func database() -> SignInConfiguration.Database? {
        guard let url = optional("SIGNIN_DATABASE_URL") else { return nil }
        let password = databasePassword()
        var tables: [String] = []
        for (variable, defaultName) in [("SIGNIN_TOKEN_TABLE", "oauth2_tokens"), ("SIGNIN_SESSION_TABLE", "signin_sessions")] {
            let name = optional(variable) ?? defaultName
            if !PostgresSessionStore.isTableName(name) {
                invalid(variable, PostgresSessionStore.tableNameRule)
            }
            tables.append(name)
        }
        if tables[0] == tables[1] {
            invalid("SIGNIN_SESSION_TABLE", "must differ from SIGNIN_TOKEN_TABLE")
        }
        do throws(OAuth2Error) {
            // The framework's message never repeats the URL's user info.
            let client = try PostgresTokenStore.clientConfiguration(url: url, password: password)
            return SignInConfiguration.Database(client: client, tokenTable: tables[0], sessionTable: tables[1])
        } catch {
            invalid("SIGNIN_DATABASE_URL", error.message)
            return nil
        }
    }

    /// `PGPASSWORD`, or the first line of `SIGNIN_DATABASE_PASSWORD_FILE`; never echoed.
    private mutating func databasePassword() -> String? {
        let fileName = "SIGNIN_DATABASE_PASSWORD_FILE"
        switch (environment["PGPASSWORD"].flatMap { $0.isEmpty ? nil : $0 }, optional(fileName)) {
        case (let password?, nil):
            return password
        case (nil, let path?):
            guard let data = FileManager.default.contents(atPath: path),
                let password = String(data: data, encoding: .utf8)?.trimmingCharacters(in: .newlines), !password.isEmpty
            else {
                invalid(fileName, "cannot read a password from that file")
                return nil
            }
            return password
        case (.some, .some):
            invalid(fileName, "set PGPASSWORD or \(fileName), not both")
            return nil
        case (nil, nil):
            return nil
        }
    }

    mutating func storeKey(text textName: String, file fileName: String) -> FileTokenStore.EncryptionKey? {
        let text = optional(textName)
        let path = optional(fileName)
        do throws(OAuth2Error) {
            switch (text, path) {
            case (nil, nil):
                return nil
            case (let text?, nil):
                return try FileTokenStore.EncryptionKey(text: text)
            case (nil, let path?):
                return try FileTokenStore.EncryptionKey.fromFile(atPath: path)
            case (.some, .some):
                invalid(textName, "set \(textName) or \(fileName), not both")
                return nil
            }
        } catch {
            // The framework's message gives the key's length or the file's problem, never the key.
            invalid(text != nil ? textName : fileName, error.message)
            return nil
        }
    }

    mutating func checkRedirectURI(_ url: URL, variable: String) {
        if url.path != SignInConfiguration.callbackPath {
            invalid(variable, "its path must be \(SignInConfiguration.callbackPath), the route that finishes the sign-in")
        }
        if url.query != nil || url.fragment != nil {
            invalid(variable, "must have no query and no fragment")
        }
    }
}
