#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// Records (registrations, discovered resources) kept beside the tokens:
/// one file per record, named `<kind>.<name>.record` (kind and name
/// percent-encoded as account names are; no account's `.token` or `.lock`
/// file can have that name), under the same rules as a token file: 0600 whatever the umask,
/// written to a temporary file, fsynced and renamed, refused when it is a
/// link, someone else's, open to others, over 1 MiB or damaged, and sealed
/// with the store's key (the record's kind and name as
/// authenticated data, so a record file copied over another does not load).
extension FileTokenStore: ClientRecordStore {
    /// The record under `key`, or `nil` when it has no file.
    ///
    /// - Throws: `store_error` for a file that is there but cannot be trusted or read.
    public func loadRecord(_ key: ClientRecordKey) async throws(OAuth2Error) -> Data? {
        let name = try TokenFileName.fileName(for: key)
        let subject = describeRecordFile(key, name: name)
        guard
            let bytes = try readPrivateFile(
                name, subject: subject,
                ownerAdvice: "refusing a record file someone else controls",
                modeAdvice: "refusing it (a client secret in it may be exposed: delete the file and register again)")
        else { return nil }
        return try RecordFileFormat.decode(bytes, key: key, encryption: encryption, subject: subject)
    }

    /// Replaces the record under `key`, atomically and durably.
    ///
    /// - Throws: `store_error` naming the step that failed; up to the rename,
    ///   the previous record is left as it was.
    public func saveRecord(_ record: Data, for key: ClientRecordKey) async throws(OAuth2Error) {
        let name = try TokenFileName.fileName(for: key)
        let subject = describeRecordFile(key, name: name)
        let bytes = try RecordFileFormat.encode(record, key: key, encryption: encryption)
        guard bytes.count <= Self.maximumFileSize else {
            throw OAuth2Error.store("the \(key) is \(bytes.count) bytes encoded, over the store's limit of \(Self.maximumFileSize)")
        }
        let temporary = try writeTemporaryFile(bytes, for: name, subject: subject)
        do {
            try StoreFileSystem.renameFile(in: directoryDescriptor, temporary, to: name)
        } catch {
            _ = try? StoreFileSystem.removeFile(in: directoryDescriptor, temporary)
            throw OAuth2Error.store(
                "cannot save \(subject): renaming the temporary file failed: \(error.reason); the previous record is unchanged")
        }
        do {
            try StoreFileSystem.synchronize(directoryDescriptor)
        } catch {
            throw OAuth2Error.store(
                "saved \(subject), but flushing the directory failed: \(error.reason); after a crash the file may hold the previous record")
        }
    }

    /// Deletes the record under `key`; deleting one that is not there succeeds.
    ///
    /// - Throws: `store_error` when the file cannot be removed.
    public func deleteRecord(_ key: ClientRecordKey) async throws(OAuth2Error) {
        let name = try TokenFileName.fileName(for: key)
        do {
            guard try StoreFileSystem.removeFile(in: directoryDescriptor, name) else { return }
            try StoreFileSystem.synchronize(directoryDescriptor)
        } catch {
            throw OAuth2Error.store("cannot delete \(describeRecordFile(key, name: name)): \(error.reason)")
        }
    }

    private func describeRecordFile(_ key: ClientRecordKey, name: String) -> String {
        "the record file of \(OAuth2Error.sanitize(String(key.description.prefix(200)))) (\(directory)/\(name))"
    }
}
