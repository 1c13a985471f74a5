import OpenAPIRuntime

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension HTTPBody {
    /// The whole body, or `nil` when it is longer than `limit` bytes (said by
    /// its known length before anything is read, or found while reading).
    ///
    /// Unlike `Data(collecting:upTo:)`, an oversized body is told apart from
    /// a failure of the body's own source, whose error is thrown as it is.
    func collected(upTo limit: Int) async throws -> Data? {
        if case .known(let length) = length, length > limit {
            return nil
        }
        var data = Data()
        for try await chunk in self {
            guard chunk.count <= limit - data.count else { return nil }
            data.append(contentsOf: chunk)
        }
        return data
    }
}
