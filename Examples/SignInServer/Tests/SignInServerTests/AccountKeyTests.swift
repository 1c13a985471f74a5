import Foundation
import OAuth2
@testable import SignInServerCore
import Testing

/// The token store's account keys; no provider needed.
struct AccountKeyTests {
    @Test func anOpenIDUsersKeyIsStableAndNamesTheIssuerByItsHash() {
        let key = AccountKey.subject(issuer: "https://accounts.example", subject: "248289761001")
        #expect(key == AccountKey.subject(issuer: "https://accounts.example", subject: "248289761001"))
        #expect(key.hasPrefix("oidc:"))
        #expect(key.hasSuffix(":248289761001"))
        let digest = key.dropFirst("oidc:".count).dropLast(":248289761001".count)
        #expect(digest.count == 43)
        #expect(digest.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") })
        #expect(!key.contains("accounts.example"))
        #expect(AccountKey.isSubject(key))
        #expect(!AccountKey.isSubject(AccountKey.user("alice")))
    }

    @Test func oneSubjectAtTwoIssuersIsTwoAccounts() {
        let keys: Set<String> = [
            AccountKey.subject(issuer: "https://a.example", subject: "1"),
            AccountKey.subject(issuer: "https://b.example", subject: "1"),
            AccountKey.subject(issuer: "https://a.example/", subject: "1"),
            AccountKey.subject(issuer: "https://a.example", subject: "2"),
            // A `:` in sub cannot make another issuer's key: the digest has a fixed length.
            AccountKey.subject(issuer: "https://a.example", subject: "1:2"),
            AccountKey.user("1"),
        ]
        #expect(keys.count == 6)
    }

    @Test func anyLegalSubjectGivesAFileNameInsideTheStore() throws {
        let subjects = [
            "../../etc/passwd",
            ".hidden",
            "a/b\\c:d e%f",
            String(repeating: "x", count: 255),
            String((0x21...0x7E).map { Character(UnicodeScalar(UInt8($0))) })
                + String((0x21...0x7E).map { Character(UnicodeScalar(UInt8($0))) }).prefix(255 - 94),
        ]
        var names: Set<String> = []
        for subject in subjects {
            let name = try FileTokenStore.fileName(for: AccountKey.subject(issuer: "https://accounts.example", subject: subject))
            #expect(!name.contains("/"))
            #expect(!name.hasPrefix("."))
            #expect(name.utf8.count <= 255)
            names.insert(name)
        }
        #expect(names.count == subjects.count)
    }
}
