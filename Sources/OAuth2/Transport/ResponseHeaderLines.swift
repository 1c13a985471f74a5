import HTTPTypes

/// The header lines of one response as the transport read them, made into
/// `HTTPFields` only when someone reads them.
///
/// libcurl hands the header lines over on the transport's thread, which every
/// request of the transport needs; a `String` per name and value, their
/// checks and their release cost about as much as the rest of the engine's
/// work on a response. Most callers read the
/// status and the body only, so the lines are kept as bytes and parsed on
/// the reader's thread when ``fields`` is asked for.
///
/// `bytes` holds each line without its line ending and with every CR and NUL
/// already replaced by a space (RFC 9110 §5.5), followed by one LF: fields,
/// and the continuation lines of obsolete line folding (RFC 9112 §5.2). No
/// status line: a status line starts a new response and clears the lines.
struct ResponseHeaderLines: Sendable, Equatable {
    var bytes: [UInt8] = []

    /// The fields, in order: a folded line continues the value before it, and a
    /// field whose name is not an HTTP token is dropped with its continuation
    /// lines (HTTP/2 would refuse it; no server could mean it).
    var fields: HTTPFields {
        var fields = HTTPFields()
        guard !bytes.isEmpty else { return fields }
        fields.reserveCapacity(Self.typicalFieldCount)
        bytes.withUnsafeBufferPointer { all in
            var pending: (name: String, value: String)?
            func flush() {
                if let field = pending, let name = HTTPField.Name(field.name) {
                    fields.append(HTTPField(name: name, value: field.value))
                }
                pending = nil
            }
            var start = 0
            while start < all.count {
                let end = all[start...].firstIndex(of: Self.lineFeed) ?? all.count
                defer { start = end + 1 }
                guard end > start else { continue }
                let line = UnsafeBufferPointer(rebasing: all[start..<end])
                if Self.isContinuation(line) {
                    if let field = pending, let value = Self.value(field.value, continuedBy: line) {
                        pending = (field.name, value)
                    }
                    continue
                }
                flush()
                guard let colon = line.firstIndex(of: UInt8(ascii: ":")), colon > 0 else { continue }
                let name = String(decoding: UnsafeBufferPointer(rebasing: line[0..<colon]), as: UTF8.self)
                pending = (name, Self.trimmedString(UnsafeBufferPointer(rebasing: line[(colon + 1)...])))
            }
            flush()
        }
        return fields
    }

    /// Adds one line: its content without line ending, CR or NUL.
    mutating func append(_ line: UnsafeBufferPointer<UInt8>) {
        bytes.append(contentsOf: line)
        bytes.append(Self.lineFeed)
    }

    /// Room for the fields of a typical response (nginx sends five), so they are appended without regrowing.
    static let typicalFieldCount = 12
    /// Room for a typical response's header lines (nginx's: about 150
    /// bytes), reserved by the transfer on its caller's thread before any
    /// line arrives.
    static let typicalByteCount = 512

    static let lineFeed = UInt8(ascii: "\n")

    /// Whether a line continues the previous field's value (it starts with a space or a tab).
    static func isContinuation(_ line: UnsafeBufferPointer<UInt8>) -> Bool {
        line.first == UInt8(ascii: " ") || line.first == UInt8(ascii: "\t")
    }

    /// What a continuation line (obsolete line folding, RFC 9112 §5.2) makes
    /// of the value before it: its trimmed text after one space; `nil` when
    /// it adds nothing.
    static func value(_ value: String, continuedBy line: UnsafeBufferPointer<UInt8>) -> String? {
        let more = trimmedString(line)
        guard !more.isEmpty else { return nil }
        return value.isEmpty ? more : value + " " + more
    }

    /// The bytes without leading and trailing spaces and tabs, as a string.
    static func trimmedString(_ bytes: UnsafeBufferPointer<UInt8>) -> String {
        var start = 0
        var end = bytes.count
        while start < end, bytes[start] == UInt8(ascii: " ") || bytes[start] == UInt8(ascii: "\t") {
            start += 1
        }
        while end > start, bytes[end - 1] == UInt8(ascii: " ") || bytes[end - 1] == UInt8(ascii: "\t") {
            end -= 1
        }
        return String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<end]), as: UTF8.self)
    }
}
