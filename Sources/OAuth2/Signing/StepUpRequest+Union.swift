#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension StepUpRequest {
    /// `held` then the names of `asked` it lacks, in their order, without repeats.
    package static func union(_ held: [String], _ asked: [String]) -> [String] {
        var seen = Set<String>()
        return (held + asked).filter { seen.insert($0).inserted }
    }
}

extension AccessToken {
    /// The resource the token was obtained for (``TokenBinding/resource``), as a URL.
    var boundResource: URL? {
        binding?.resource.flatMap { URL(string: $0) }
    }
}
