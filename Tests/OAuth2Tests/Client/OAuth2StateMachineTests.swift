import Foundation
@testable import OAuth2
import Testing

@Suite struct OAuth2StateMachineTests {
    let now = Date(timeIntervalSince1970: 1_800_000_000)

    func token(expiresIn: TimeInterval?, refresh: Bool = true, access: String = "a") -> AccessToken {
        AccessToken(
            accessToken: Secret(access),
            expiresAt: expiresIn.map { now.addingTimeInterval($0) },
            refreshToken: refresh ? Secret("r") : nil
        )
    }

    @Test func unloadedMachineAsksToLoadTheStore() {
        let machine = OAuth2StateMachine()
        #expect(machine.tokenNeeded(now: now, skewSeconds: 60) == .load)
    }

    @Test func loadingNothingMeansNotAuthenticated() {
        var machine = OAuth2StateMachine()
        machine.loaded(nil)
        #expect(machine.tokenNeeded(now: now, skewSeconds: 60) == .notAuthenticated)
    }

    @Test func validTokenIsUsed() {
        var machine = OAuth2StateMachine()
        let valid = token(expiresIn: 3600)
        machine.loaded(valid)
        #expect(machine.tokenNeeded(now: now, skewSeconds: 60) == .use(valid))
    }

    @Test func tokenInsideTheSkewIsRefreshed() {
        var machine = OAuth2StateMachine()
        let expiring = token(expiresIn: 30)
        machine.loaded(expiring)
        #expect(machine.tokenNeeded(now: now, skewSeconds: 60) == .refresh(expiring))
        #expect(machine.tokenNeeded(now: now, skewSeconds: 10) == .use(expiring))
    }

    @Test func expiringTokenWithoutRefreshTokenIsStillUsed() {
        var machine = OAuth2StateMachine()
        let expiring = token(expiresIn: -5, refresh: false)
        machine.loaded(expiring)
        #expect(machine.tokenNeeded(now: now, skewSeconds: 60) == .use(expiring))
    }

    @Test func laterLoadDoesNotOverwriteANewerToken() {
        var machine = OAuth2StateMachine()
        let granted = token(expiresIn: 3600, access: "new")
        _ = machine.grantSucceeded(granted)
        machine.loaded(token(expiresIn: 3600, access: "old"))
        #expect(machine.currentToken == granted)
    }

    @Test func failedGrantKeepsThePreviousToken() {
        var machine = OAuth2StateMachine()
        let held = token(expiresIn: 3600)
        machine.loaded(held)
        machine.grantStarted()
        let error = OAuth2Error(code: .invalidGrant, message: "no")
        #expect(machine.grantFailed(error) == .failed(error))
        #expect(machine.currentToken == held)
    }

    @Test func refreshFailureThatIsNotALossKeepsTheToken() {
        var machine = OAuth2StateMachine()
        let held = token(expiresIn: 10)
        machine.loaded(held)
        machine.refreshStarted()
        let error = OAuth2Error(code: .httpError, message: "503")
        #expect(machine.refreshFailed(error, lost: false, leader: true) == .failed(error))
        #expect(machine.currentToken == held)
    }

    @Test func lostGrantClearsTheToken() {
        var machine = OAuth2StateMachine()
        machine.loaded(token(expiresIn: 10))
        machine.refreshStarted()
        let error = OAuth2Error(code: .invalidGrant, message: "gone")
        #expect(machine.refreshFailed(error, lost: true, leader: true) == .lost(error))
        #expect(machine.currentToken == nil)
        #expect(machine.tokenNeeded(now: now, skewSeconds: 0) == .notAuthenticated)
    }

    @Test func onlyTheLeaderOfARefreshNotifies() {
        var leader = OAuth2StateMachine()
        var follower = OAuth2StateMachine()
        let fresh = token(expiresIn: 3600, access: "fresh")
        #expect(leader.refreshSucceeded(fresh, leader: true, refreshed: true) == .refreshed(fresh))
        #expect(follower.refreshSucceeded(fresh, leader: false, refreshed: true) == nil)
        #expect(follower.currentToken == fresh)
    }

    @Test func pendingFlowKeepsTheHeldTokenAndSurvivesARefresh() throws {
        var machine = OAuth2StateMachine()
        let held = token(expiresIn: 3600)
        machine.loaded(held)
        let pending = try OAuth2Client.makePendingForTests(now: now)
        machine.authorizationStarted(pending)
        #expect(machine.pendingAuthorization == pending)
        #expect(machine.currentToken == held)
        let fresh = token(expiresIn: 3600, access: "fresh")
        _ = machine.refreshSucceeded(fresh, leader: true, refreshed: true)
        #expect(machine.pendingAuthorization == pending)
        #expect(machine.currentToken == fresh)
    }
}

extension OAuth2Client {
    static func makePendingForTests(now: Date) throws -> PendingAuthorization {
        try AuthorizationRequestBuilder.make(
            configuration: Fixture.configuration(),
            redirectURI: Fixture.redirectURI,
            scopes: ["read"],
            additionalParameters: [],
            now: now
        )
    }
}

@Suite struct OAuth2StateMachineLoadTests {
    let now = Date(timeIntervalSince1970: 1_800_000_000)

    @Test func storeReadAfterAFlowStartedAddsTheStoredToken() throws {
        var machine = OAuth2StateMachine()
        let pending = try OAuth2Client.makePendingForTests(now: now)
        machine.authorizationStarted(pending)
        #expect(machine.tokenNeeded(now: now, skewSeconds: 0) == .load)
        let stored = AccessToken(accessToken: Secret("stored"), expiresAt: now.addingTimeInterval(3600))
        machine.loaded(stored)
        #expect(machine.pendingAuthorization == pending)
        #expect(machine.tokenNeeded(now: now, skewSeconds: 0) == .use(stored))
    }

    @Test func emptyStoreAfterAFlowStartedMeansNotAuthenticated() throws {
        var machine = OAuth2StateMachine()
        machine.authorizationStarted(try OAuth2Client.makePendingForTests(now: now))
        machine.loaded(nil)
        #expect(machine.tokenNeeded(now: now, skewSeconds: 0) == .notAuthenticated)
    }
}
