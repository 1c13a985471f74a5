#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension FileTokenStore {
    /// What tests can interpose on the store's file-system work; `package`
    /// so that the crash tests' child process (Tests/StoreCrashChild) can
    /// stop at a step of its own save.
    package struct Hooks: Sendable {
        /// Runs after the temporary file is written, fsynced and closed, just
        /// before the rename; a throw aborts the save as a failing rename would.
        package var beforeRename: (@Sendable (_ temporaryFileName: String) async throws -> Void)?
        /// Asked at each step of a save, right where its system call is made,
        /// and again for each retry of that call; an answer replaces the call's
        /// outcome (see ``StoreFileSystem/InjectedFault``), so every failure a
        /// disk can produce is reachable without filling or breaking one.
        package var failing: (@Sendable (SaveStep) -> StoreFileSystem.InjectedFault?)?
        /// Runs right after the store makes a directory of its path (the
        /// path made so far), before it opens it.
        package var afterCreatingDirectory: (@Sendable (_ path: String) -> Void)?

        package init(
            beforeRename: (@Sendable (_ temporaryFileName: String) async throws -> Void)? = nil,
            failing: (@Sendable (SaveStep) -> StoreFileSystem.InjectedFault?)? = nil,
            afterCreatingDirectory: (@Sendable (_ path: String) -> Void)? = nil
        ) {
            self.beforeRename = beforeRename
            self.failing = failing
            self.afterCreatingDirectory = afterCreatingDirectory
        }
    }

    /// The steps of a save, in order, each one system call.
    package enum SaveStep: String, Sendable, CaseIterable {
        case createTemporaryFile
        case setMode
        case write
        case synchronizeFile
        case closeFile
        case rename
        case synchronizeDirectory

        /// What the step does, for a message: "<activity> failed: <strerror>".
        var activity: String {
            switch self {
            case .createTemporaryFile: "creating a temporary file"
            case .setMode: "setting the temporary file's mode to 0600"
            case .write: "writing the temporary file"
            case .synchronizeFile: "flushing the temporary file to disk (fsync)"
            case .closeFile: "closing the temporary file"
            case .rename: "renaming the temporary file over the token file"
            case .synchronizeDirectory: "flushing the directory to disk (fsync)"
            }
        }
    }

    /// The fault to inject at `step`, for ``StoreFileSystem``'s `injecting:` parameters.
    func fault(at step: SaveStep) -> () -> StoreFileSystem.InjectedFault? {
        let failing = hooks.failing
        return { failing?(step) }
    }
}
