import Foundation
import Testing
@testable import OAuth2

#if canImport(Glibc)
import Glibc
#endif

/// Every step of a save failing as a disk can make it fail, through the
/// store's fault injector: the error says what failed, the previous token
/// survives every failure up to the rename, nothing is left behind, and the
/// next save works.
@Suite struct FileTokenStoreFaultTests {
    typealias SaveStep = FileTokenStore.SaveStep

    /// An errno and the text glibc gives it, spelled out so the test does not
    /// take the expected text from the code under test.
    struct Failure: Sendable, CustomTestStringConvertible {
        var errno: Int32
        var text: String
        var testDescription: String { text }
    }

    static let failures = [
        Failure(errno: ENOSPC, text: "No space left on device"),
        Failure(errno: EIO, text: "Input/output error"),
        Failure(errno: EACCES, text: "Permission denied"),
    ]
    /// The steps whose failure leaves the old file in place.
    static let stepsUpToTheRename = SaveStep.allCases.filter { $0 != .synchronizeDirectory }

    @Test(arguments: SaveStep.allCases, failures)
    func aFailedStepIsAStoreErrorThatSaysWhatFailedAndWhy(step: SaveStep, failure: Failure) async throws {
        let fixture = try await Self.storeWithAlice { asked, _ in asked == step ? .error(failure.errno) : nil }
        fixture.faults.arm()

        let error = try await #require(throws: OAuth2Error.self) { try await fixture.store.save(StoreFixtures.token(2), account: "alice") }

        #expect(error.code == .storeError)
        #expect(error.message.contains("account \"alice\""))
        #expect(error.message.contains("\(step.activity) failed: \(failure.text)"), "\(error.message)")
        for secret in [StoreFixtures.accessTokenValue, StoreFixtures.refreshTokenValue, StoreFixtures.idTokenValue] {
            #expect(!error.description.contains(secret))
            #expect(!String(reflecting: error).contains(secret))
        }
    }

    @Test(arguments: stepsUpToTheRename, failures)
    func aSaveFailingUpToTheRenameKeepsThePreviousToken(step: SaveStep, failure: Failure) async throws {
        let fixture = try await Self.storeWithAlice { asked, _ in asked == step ? .error(failure.errno) : nil }
        fixture.faults.arm()

        let error = try await #require(throws: OAuth2Error.self) { try await fixture.store.save(StoreFixtures.token(2), account: "alice") }

        #expect(error.message.contains("the previous token is unchanged"))
        #expect(try await fixture.store.load(account: "alice") == StoreFixtures.token(1))
    }

    @Test(arguments: failures)
    func aSaveFailingToFlushTheDirectoryLeavesTheNewTokenReadableAndSaysSo(failure: Failure) async throws {
        let fixture = try await Self.storeWithAlice { asked, _ in asked == .synchronizeDirectory ? .error(failure.errno) : nil }
        fixture.faults.arm()

        let error = try await #require(throws: OAuth2Error.self) { try await fixture.store.save(StoreFixtures.token(2), account: "alice") }

        #expect(error.message.contains("the new token is in place and loads"), "\(error.message)")
        #expect(!error.message.contains("the previous token is unchanged"))
        #expect(try await fixture.store.load(account: "alice") == StoreFixtures.token(2))
    }

    @Test(arguments: SaveStep.allCases, failures)
    func aFailedSaveLeavesNoTemporaryFile(step: SaveStep, failure: Failure) async throws {
        let fixture = try await Self.storeWithAlice { asked, _ in asked == step ? .error(failure.errno) : nil }
        fixture.faults.arm()

        await #expect(throws: OAuth2Error.self) { try await fixture.store.save(StoreFixtures.token(2), account: "alice") }

        #expect(try fixture.scratch.storeEntries() == ["alice.token"])
    }

    @Test(arguments: SaveStep.allCases)
    func aSaveAfterAFailedOneSucceeds(step: SaveStep) async throws {
        let fixture = try await Self.storeWithAlice { asked, _ in asked == step ? .error(EIO) : nil }
        fixture.faults.arm()
        await #expect(throws: OAuth2Error.self) { try await fixture.store.save(StoreFixtures.token(2), account: "alice") }
        fixture.faults.disarm()

        try await fixture.store.save(StoreFixtures.token(3), account: "alice")

        #expect(try await fixture.store.load(account: "alice") == StoreFixtures.token(3))
    }

    /// A disk that fills mid-write: the first write stores a few bytes, the next fails.
    @Test(arguments: failures)
    func aShortWriteThenAFailureKeepsThePreviousTokenAndNoTemporaryFile(failure: Failure) async throws {
        let fixture = try await Self.storeWithAlice { asked, attempt in
            guard asked == .write else { return nil }
            return attempt == 1 ? .shortWrite(10) : .error(failure.errno)
        }
        fixture.faults.arm()

        let error = try await #require(throws: OAuth2Error.self) { try await fixture.store.save(StoreFixtures.token(2), account: "alice") }

        #expect(error.message.contains("writing the temporary file failed: \(failure.text)"), "\(error.message)")
        #expect(fixture.faults.asked(.write) == 2)
        #expect(try await fixture.store.load(account: "alice") == StoreFixtures.token(1))
        #expect(try fixture.scratch.storeEntries() == ["alice.token"])
    }

    /// `write` may store fewer bytes than asked without failing; the rest must follow.
    @Test func shortWritesAreContinuedUntilTheWholeTokenIsWritten() async throws {
        let fixture = try await Self.storeWithAlice { asked, _ in asked == .write ? .shortWrite(7) : nil }
        fixture.faults.arm()

        try await fixture.store.save(StoreFixtures.token(2), account: "alice")

        #expect(fixture.faults.asked(.write) > 2)
        #expect(try await fixture.store.load(account: "alice") == StoreFixtures.token(2))
    }

    /// The steps whose call is made again after `EINTR`.
    static let restartedSteps = [SaveStep.createTemporaryFile, .write, .synchronizeFile, .synchronizeDirectory]

    /// A signal arriving during a call is not a failure of the disk.
    @Test(arguments: restartedSteps)
    func anInterruptedCallIsRetriedNotFailed(step: SaveStep) async throws {
        let fixture = try await Self.storeWithAlice { asked, attempt in
            asked == step && attempt == 1 ? .error(EINTR) : nil
        }
        fixture.faults.arm()

        try await fixture.store.save(StoreFixtures.token(2), account: "alice")

        #expect(fixture.faults.asked(step) == 2)
        #expect(try await fixture.store.load(account: "alice") == StoreFixtures.token(2))
    }

    /// The calls not made again after `EINTR` (Linux does not interrupt
    /// them on a local disk): `fchmod`, `close` (Linux releases the
    /// descriptor whatever it returns, and a retry could close another
    /// thread's) and `rename` (it may have happened). An interruption fails
    /// the save like any failure: said, the previous token kept, nothing left.
    @Test(arguments: SaveStep.allCases.filter { !restartedSteps.contains($0) })
    func anInterruptedCallThatIsNotRestartedFailsTheSaveAndKeepsThePreviousToken(step: SaveStep) async throws {
        let fixture = try await Self.storeWithAlice { asked, attempt in
            asked == step && attempt == 1 ? .error(EINTR) : nil
        }
        fixture.faults.arm()

        let error = try await #require(throws: OAuth2Error.self) { try await fixture.store.save(StoreFixtures.token(2), account: "alice") }

        #expect(error.message.contains("\(step.activity) failed: Interrupted system call"), "\(error.message)")
        #expect(fixture.faults.asked(step) == 1)
        #expect(try await fixture.store.load(account: "alice") == StoreFixtures.token(1))
        #expect(try fixture.scratch.storeEntries() == ["alice.token"])
    }

    /// A `write` that stores nothing and reports no error would be retried
    /// forever: it is an I/O error.
    @Test func aWriteThatStoresNothingFailsTheSaveAndKeepsThePreviousToken() async throws {
        let fixture = try await Self.storeWithAlice { asked, _ in asked == .write ? .shortWrite(0) : nil }
        fixture.faults.arm()

        let error = try await #require(throws: OAuth2Error.self) { try await fixture.store.save(StoreFixtures.token(2), account: "alice") }

        #expect(error.message.contains("writing the temporary file failed: Input/output error"), "\(error.message)")
        #expect(fixture.faults.asked(.write) == 1)
        #expect(try await fixture.store.load(account: "alice") == StoreFixtures.token(1))
        #expect(try fixture.scratch.storeEntries() == ["alice.token"])
    }

    /// A store and its injector; holding it keeps the directory alive.
    struct Fixture {
        let scratch: ScratchDirectory
        let store: FileTokenStore
        let faults: SaveFaults
    }

    /// A store in a fresh directory holding token 1 for alice, saved before
    /// `decide` is armed; `decide` gets the step and how many times that step
    /// has been asked since arming (1 for the first call).
    private static func storeWithAlice(
        _ decide: @escaping @Sendable (_ step: SaveStep, _ attempt: Int) -> StoreFileSystem.InjectedFault?
    ) async throws -> Fixture {
        let scratch = try ScratchDirectory()
        let faults = SaveFaults(decide)
        let store = try FileTokenStore(directory: scratch.storePath, encryption: .plaintext, hooks: .init(failing: faults.answer))
        try await store.save(StoreFixtures.token(1), account: "alice")
        return Fixture(scratch: scratch, store: store, faults: faults)
    }
}

/// Decides the faults of a save while armed, and counts how often each step asked.
final class SaveFaults: Sendable {
    private struct State {
        var armed = false
        var asked: [FileTokenStore.SaveStep: Int] = [:]
    }

    private let state = LockedValue(State())
    private let decide: @Sendable (FileTokenStore.SaveStep, Int) -> StoreFileSystem.InjectedFault?

    init(_ decide: @escaping @Sendable (FileTokenStore.SaveStep, Int) -> StoreFileSystem.InjectedFault?) {
        self.decide = decide
    }

    func arm() {
        state.withLock { $0 = State(armed: true) }
    }

    func disarm() {
        state.withLock { $0.armed = false }
    }

    /// How many times `step` asked since arming.
    func asked(_ step: FileTokenStore.SaveStep) -> Int {
        state.withLock { $0.asked[step, default: 0] }
    }

    /// The injector given to the store.
    @Sendable func answer(_ step: FileTokenStore.SaveStep) -> StoreFileSystem.InjectedFault? {
        let attempt: Int? = state.withLock { state in
            guard state.armed else { return nil }
            state.asked[step, default: 0] += 1
            return state.asked[step]
        }
        return attempt.flatMap { decide(step, $0) }
    }
}
