import Foundation
import Testing

/// Keeps `make test-server-example` honest: there the integration suites must run, not skip.
struct ProviderRequirementTests {
    @Test(.enabled(if: ProcessInfo.processInfo.environment["SIGNIN_REQUIRE_PROVIDER"] == "1"))
    func bothProvidersAndTheDatabaseAreThereWhenRequired() {
        #expect(ProviderEnvironment.main != nil, "OAUTH2_IT_PROVIDER does not name a readable env.json")
        #expect(ProviderEnvironment.short != nil, "OAUTH2_IT_SHORT_PROVIDER does not name a readable env.json")
        #expect(TestDatabase.isConfigured, "OAUTH2_IT_POSTGRES_URL is not set")
    }
}
