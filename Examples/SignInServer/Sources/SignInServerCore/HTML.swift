/// Escapes text for HTML element content and double-quoted attributes.
///
/// Everything shown that came from outside (a user name from the provider,
/// an error code from a callback) goes through it.
enum HTML {
    /// `text` with `&`, `<`, `>`, `"` and `'` replaced by their entities.
    static func escape(_ text: String) -> String {
        var escaped = ""
        escaped.reserveCapacity(text.count)
        for character in text {
            switch character {
            case "&": escaped += "&amp;"
            case "<": escaped += "&lt;"
            case ">": escaped += "&gt;"
            case "\"": escaped += "&quot;"
            case "'": escaped += "&#39;"
            default: escaped.append(character)
            }
        }
        return escaped
    }
}
