import Foundation
@testable import OAuth2
import Testing

/// What the transport makes of the libcurl it loads, with versions stubbed.
@Suite struct CurlGlobalTests {
    @Test func aLibcurlOlderThan7_68IsRefusedWithTheVersionNeededNamed() throws {
        let error = try #require(CurlGlobal.versionError(number: 0x07_42_00, text: "7.66.0"))
        #expect(error.message.contains("libcurl 7.66.0 is too old"))
        #expect(error.message.contains("7.68.0 or later is needed"))
    }

    @Test(arguments: [UInt32(0x07_44_00), 0x07_51_00, 0x07_55_00, 0x07_58_01, 0x08_0B_00])
    func aLibcurlFrom7_68OnIsAccepted(version: UInt32) {
        #expect(CurlGlobal.versionError(number: version, text: "x") == nil)
    }

    @Test func theLoadedLibcurlIsAcceptedAndItsVersionRead() {
        #expect(CurlGlobal.initializationError == nil)
        #expect(CurlGlobal.versionNumber >= 0x07_44_00)
    }
}
