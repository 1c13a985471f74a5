import Foundation
import Testing
@testable import OAuth2

@Suite struct StateGeneratorTests {
    @Test func stateIs43Base64URLCharacters() {
        let state = StateGenerator.makeState()
        #expect(state.count == 43)
        #expect(Base64URL.isBase64URL(state))
    }

    @Test func statesAreUnique() {
        let states = Set((0..<200).map { _ in StateGenerator.makeState() })
        #expect(states.count == 200)
    }
}
