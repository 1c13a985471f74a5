// swift-http-types is the library's HTTP vocabulary (HTTPFields, statuses,
// methods): an app that imports OAuth2 can name them without importing
// HTTPTypes itself, and an app that imports both sees one set of types.
@_exported public import HTTPTypes

extension HTTPFields {
    /// Field names only, as `HTTPFields(Accept, Authorization)`: a value may
    /// be a bearer token, a Basic secret or a cookie, and `HTTPFields`' own
    /// description prints them.
    public var redactedDescription: String {
        "HTTPFields(\(map(\.name.rawName).joined(separator: ", ")))"
    }
}
