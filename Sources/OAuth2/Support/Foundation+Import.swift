// The framework needs only FoundationEssentials (URL, Data, Date, JSON coding);
// full Foundation is used where FoundationEssentials is not available.
#if canImport(FoundationEssentials)
@_exported import FoundationEssentials
#else
@_exported import Foundation
#endif
