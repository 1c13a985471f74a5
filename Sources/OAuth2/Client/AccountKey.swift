#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// An account as the stores tell accounts apart: by its exact UTF-8 bytes.
///
/// `String`'s `==` treats canonically equivalent spellings (`"José"` with a
/// precomposed `é` and with `e` + combining accent) as one; the stores keep
/// them apart, so everything keyed by account in memory must too, or two
/// such accounts would share a refresh and be handed each other's token.
struct AccountKey: Hashable, Sendable {
    let bytes: [UInt8]

    init(_ account: String) {
        bytes = Array(account.utf8)
    }
}
