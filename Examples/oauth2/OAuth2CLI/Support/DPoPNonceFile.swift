import OAuth2

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The DPoP nonces (RFC 9449 §8, §9) the CLI's runs learnt, kept between
/// runs: `dpop-nonces.json` in the token store's directory (the
/// configuration directory for a PostgreSQL store), mode 0600, replaced
/// atomically.
///
/// A provider or resource server that demands nonces answers a proof
/// without one with `use_dpop_nonce` and a nonce, and the request is sent
/// again. A process lives for one command, so without this file every run
/// would pay that round trip; with it, a run starts with the nonces the last
/// one saw (servers keep a nonce valid for a while, and a stale one costs
/// the same single retry as none).
///
/// Not in the token record: a nonce belongs to an origin, not to a grant,
/// and changes on many answers, where a token changes on a refresh; writing
/// the record for each would put a store write, and its lock, on every call.
/// A nonce is not a secret (a server sends it to anyone), so the file is
/// plain JSON; several processes may write it at once, and the last one's
/// nonces win, which is as good as any.
struct DPoPNonceFile: Sendable {
    let directory: String
    static let name = "dpop-nonces.json"

    /// The file beside `store`.
    init(store: StoreLocation) throws {
        switch store {
        case .directory(let directory): self.directory = directory
        case .postgres: directory = try ConfigDirectory.path()
        }
    }

    private struct Content: Codable {
        struct Entry: Codable {
            let origin: String
            let nonce: String
        }
        /// The least recently updated first, as ``DPoPNonceCache/entries`` lists them.
        var nonces: [Entry]
    }

    /// The nonces saved, least recently updated first; none when the file is
    /// missing, unreadable or damaged (a nonce is only a hint).
    func load() -> [(origin: String, nonce: String)] {
        guard let bytes = try? ConfigDirectory.read(directory + "/" + Self.name),
            let content = try? JSONDecoder().decode(Content.self, from: Data(bytes))
        else { return [] }
        return content.nonces.map { (origin: $0.origin, nonce: $0.nonce) }
    }

    /// Saves `entries` when they differ from `loaded` (what the run started with).
    ///
    /// - Throws: `invalid_configuration` when the file cannot be written.
    func save(_ entries: [(origin: String, nonce: String)], loaded: [(origin: String, nonce: String)]) throws {
        guard !entries.elementsEqual(loaded, by: { $0.origin == $1.origin && $0.nonce == $1.nonce }) else { return }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let data = try encoder.encode(Content(nonces: entries.map { Content.Entry(origin: $0.origin, nonce: $0.nonce) }))
        try ConfigDirectory.write(Array(data), name: Self.name, in: directory)
    }
}
