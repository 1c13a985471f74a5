extension OAuth2Error {
    /// A `store_error` with `message`, which must name no secret.
    static func store(_ message: String) -> OAuth2Error {
        OAuth2Error(code: .storeError, message: message)
    }
}
