#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// Where a client that configures itself keeps what it learned: its
/// registrations (RFC 7591, with their secrets) and the resources it
/// discovered (RFC 9728), so that the next run needs no round trip.
///
/// A record is opaque bytes under a ``ClientRecordKey``; a store keeps it as
/// it keeps tokens: ``FileTokenStore`` seals it with the tokens' key (the
/// record's key as associated data), ``InMemoryTokenStore`` holds it in
/// memory. Only "nothing stored" is `nil`; a record that is there but cannot
/// be read is a `store_error`.
public protocol ClientRecordStore: Sendable {
    /// The record stored under `key`, or `nil` when there is none.
    func loadRecord(_ key: ClientRecordKey) async throws(OAuth2Error) -> Data?
    /// Stores `record` under `key`, replacing what was there, atomically.
    func saveRecord(_ record: Data, for key: ClientRecordKey) async throws(OAuth2Error)
    /// Deletes the record under `key`; deleting what is not there succeeds.
    func deleteRecord(_ key: ClientRecordKey) async throws(OAuth2Error)
}

/// The key of a record in a ``ClientRecordStore``: a kind and a name. Neither is a secret.
public struct ClientRecordKey: Sendable, Hashable, CustomStringConvertible {
    /// The kind of record: `registration` or `resource`.
    public let kind: String
    /// What it is about: an issuer identifier, a resource URL.
    public let name: String

    /// Creates a key.
    public init(kind: String, name: String) {
        self.kind = kind
        self.name = name
    }

    /// The key of the registration made at the authorization server `issuer`.
    public static func registration(issuer: String) -> ClientRecordKey {
        ClientRecordKey(kind: "registration", name: issuer)
    }

    /// The key of what was discovered about the resource at `url`.
    public static func resource(_ url: URL) -> ClientRecordKey {
        ClientRecordKey(kind: "resource", name: url.absoluteString)
    }

    /// `kind "name"`, for messages.
    public var description: String { "\(kind) \"\(name)\"" }
}

extension ClientRecordStore {
    /// The registration kept for the authorization server `issuer`, or `nil`.
    ///
    /// - Throws: `store_error` when the record is there but cannot be decoded.
    public func loadRegistration(issuer: String) async throws(OAuth2Error) -> ClientRegistration? {
        try await loadDecoded(ClientRegistration.self, .registration(issuer: issuer))
    }

    /// Keeps `registration` under its issuer.
    public func saveRegistration(_ registration: ClientRegistration) async throws(OAuth2Error) {
        try await saveEncoded(registration, .registration(issuer: registration.issuer))
    }

    /// Forgets the registration kept for `issuer`.
    public func deleteRegistration(issuer: String) async throws(OAuth2Error) {
        try await deleteRecord(.registration(issuer: issuer))
    }

    /// The record under `key` decoded as `Value`; `store_error` when it does not decode.
    package func loadDecoded<Value: Decodable>(_ type: Value.Type, _ key: ClientRecordKey) async throws(OAuth2Error) -> Value? {
        guard let data = try await loadRecord(key) else { return nil }
        do {
            return try JSONDecoder().decode(Value.self, from: data)
        } catch {
            throw OAuth2Error(code: .storeError, message: "the stored \(key) cannot be read")
        }
    }

    /// Encodes `value` (JSON, sorted keys) and stores it under `key`.
    package func saveEncoded<Value: Encodable>(_ value: Value, _ key: ClientRecordKey) async throws(OAuth2Error) {
        let data: Data
        do {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            data = try encoder.encode(value)
        } catch {
            throw OAuth2Error(code: .storeError, message: "the \(key) cannot be encoded")
        }
        try await saveRecord(data, for: key)
    }
}
