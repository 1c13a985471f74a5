#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension OAuth2Error {
    /// A `store_error` with `message`, which must name no secret.
    package static func store(_ message: String) -> OAuth2Error {
        OAuth2Error(code: .storeError, message: message)
    }

    /// The error a store failure becomes: a store's own `store_error` as it is, anything else wrapped.
    init(storeError error: any Error, doing action: String) {
        if let error = error as? OAuth2Error {
            self = error
        } else {
            self.init(code: .storeError, message: "could not \(action) the token store: \(type(of: error))")
        }
    }
}
