public import HTTPTypes

extension HTTPFields {
    /// Field names only, as `HTTPFields(Accept, Authorization)`: a value may
    /// be a bearer token, a Basic secret or a cookie, and `HTTPFields`' own
    /// description prints them.
    public var redactedDescription: String {
        "HTTPFields(\(map(\.name.rawName).joined(separator: ", ")))"
    }
}
