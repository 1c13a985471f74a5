#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// An ordered list of HTTP header fields with case-insensitive lookup.
///
/// Order and repetition are kept as given, so a request is sent exactly as
/// built and a response shows every field the server sent.
public struct HTTPHeaders: Sendable, Hashable {
    /// The fields in order, each a name and a value.
    public private(set) var fields: [(name: String, value: String)]

    /// Creates headers from name–value pairs, in order.
    public init(_ fields: [(String, String)] = []) {
        self.fields = fields.map { (name: $0.0, value: $0.1) }
    }

    /// Empty, with room for `capacity` fields (a response's are appended one by one).
    init(reservingCapacity capacity: Int) {
        fields = []
        fields.reserveCapacity(capacity)
    }

    /// Appends a field, keeping any field of the same name.
    public mutating func add(name: String, value: String) {
        fields.append((name: name, value: value))
    }

    /// Replaces every field of this name (compared case-insensitively) with one field.
    public mutating func replaceOrAdd(name: String, value: String) {
        remove(name: name)
        fields.append((name: name, value: value))
    }

    /// Removes every field of this name, compared case-insensitively.
    public mutating func remove(name: String) {
        fields.removeAll { Self.namesEqual($0.name, name) }
    }

    /// The value of the first field of this name, compared case-insensitively.
    public subscript(name: String) -> String? {
        fields.first { Self.namesEqual($0.name, name) }?.value
    }

    /// Every value of fields with this name, in order.
    public func values(for name: String) -> [String] {
        fields.filter { Self.namesEqual($0.name, name) }.map(\.value)
    }

    /// Whether any field has this name.
    public func contains(_ name: String) -> Bool {
        fields.contains { Self.namesEqual($0.name, name) }
    }

    /// The number of fields.
    public var count: Int { fields.count }

    static func namesEqual(_ lhs: String, _ rhs: String) -> Bool {
        lhs.utf8.count == rhs.utf8.count && lhs.lowercased() == rhs.lowercased()
    }

    public static func == (lhs: HTTPHeaders, rhs: HTTPHeaders) -> Bool {
        lhs.fields.count == rhs.fields.count
            && zip(lhs.fields, rhs.fields).allSatisfy { $0.name == $1.name && $0.value == $1.value }
    }

    public func hash(into hasher: inout Hasher) {
        for field in fields {
            hasher.combine(field.name)
            hasher.combine(field.value)
        }
    }
}

extension HTTPHeaders: ExpressibleByDictionaryLiteral {
    public init(dictionaryLiteral elements: (String, String)...) {
        self.init(elements)
    }
}

extension HTTPHeaders: Sequence {
    public func makeIterator() -> IndexingIterator<[(name: String, value: String)]> {
        fields.makeIterator()
    }
}

extension HTTPHeaders: CustomStringConvertible {
    /// Field names only: values may carry credentials (`Authorization`, cookies).
    public var description: String {
        "HTTPHeaders(\(fields.map(\.name).joined(separator: ", ")))"
    }
}

extension HTTPHeaders: CustomReflectable {
    /// What `dump` and debuggers show: the field names only, as
    /// ``description`` does; a value may be a bearer token or a Basic secret.
    public var customMirror: Mirror {
        Mirror(self, children: ["names": fields.map(\.name)], displayStyle: .struct)
    }
}
