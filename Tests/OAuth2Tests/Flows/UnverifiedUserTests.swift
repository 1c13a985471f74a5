import Foundation
import Testing
@testable import OAuth2

/// Apple's first-sign-in `user` ("Incorporating Sign in with Apple into other
/// platforms"): `{"name":{"firstName":…,"lastName":…},"email":…}`, read as
/// untrusted text.
@Suite struct UnverifiedUserTests {
    @Test func readsApplesShape() {
        let user = UnverifiedUser(json: #"{"name":{"firstName":"Jane","lastName":"Appleseed"},"email":"j@privaterelay.appleid.com"}"#)
        #expect(user?.firstName == "Jane")
        #expect(user?.lastName == "Appleseed")
        #expect(user?.email == "j@privaterelay.appleid.com")
    }

    @Test func readsWhatIsThereLeniently() {
        #expect(
            UnverifiedUser(json: #"{"email":"j@example.com"}"#) == UnverifiedUser(firstName: nil, lastName: nil, email: "j@example.com"))
        #expect(UnverifiedUser(json: #"{"name":{"firstName":"Jane","lastName":7},"extra":[1,2]}"#)?.lastName == nil)
        #expect(UnverifiedUser(json: #"{"name":{"firstName":"Jane"}}"#)?.firstName == "Jane")
    }

    @Test func hostileInputIsCleanedOrIgnored() {
        #expect(UnverifiedUser(json: #"{"name":{"firstName":"Ja\u0000ne\r\n<script>"}}"#)?.firstName == "Jane<script>")
        #expect(UnverifiedUser(json: #"{"name":{"firstName":"  "}}"#) == nil)
        let long = String(repeating: "x", count: UnverifiedUser.maxPartLength + 1)
        #expect(UnverifiedUser(json: #"{"name":{"firstName":"\#(long)"},"email":"a@b"}"#)?.firstName == nil)
        let huge = #"{"email":"a@b","pad":""# + String(repeating: "x", count: UnverifiedUser.maxJSONSize) + #""}"#
        #expect(UnverifiedUser(json: huge) == nil)
        #expect(UnverifiedUser(json: #"{"a":{"b":{"c":{"d":{"e":{}}}}},"email":"a@b"}"#) == nil)
        #expect(UnverifiedUser(json: #"{"email":"a@b","email":"c@d"}"#) == nil)
        #expect(UnverifiedUser(json: "null") == nil)
    }

    @Test func itsDescriptionNamesThePartsOnly() throws {
        let user = try #require(UnverifiedUser(json: #"{"name":{"firstName":"Jane"},"email":"j@example.com"}"#))
        #expect(user.description == "UnverifiedUser(firstName, email)")
    }
}
