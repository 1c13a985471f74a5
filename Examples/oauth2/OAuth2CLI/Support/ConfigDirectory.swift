import OAuth2

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The CLI's configuration directory and the private files in it.
///
/// `$OAUTH2_CONFIG_DIR`, else `$XDG_CONFIG_HOME/oauth2` (when absolute), else
/// `~/.config/oauth2`: by default the same directory as the token store, whose
/// files (`*.token`) it never touches. Created with mode 0700; files are
/// written with mode 0600 through a temporary file, fsync and rename, so a
/// reader sees the old content or the new, never half of it.
enum ConfigDirectory {
    /// The directory, or a usage error when neither a variable nor HOME says where it is.
    static func path() throws -> String {
        if let directory = EnvironmentVariables.value("OAUTH2_CONFIG_DIR") {
            return directory
        }
        if let config = EnvironmentVariables.value("XDG_CONFIG_HOME"), config.hasPrefix("/") {
            return config + "/oauth2"
        }
        if let home = EnvironmentVariables.value("HOME") {
            return home + "/.config/oauth2"
        }
        throw UsageError("no configuration directory: set OAUTH2_CONFIG_DIR (or XDG_CONFIG_HOME, or HOME)")
    }

    /// The largest configuration file read.
    static let limit = 1 << 20

    /// The content of `path`, or `nil` when it does not exist.
    ///
    /// - Throws: `invalid_configuration` when it cannot be read, is too large,
    ///   or others than its owner may write it (someone else could then
    ///   redirect the CLI's sign-ins to a server of theirs).
    static func read(_ path: String) throws(OAuth2Error) -> [UInt8]? {
        func failure(_ reason: String) -> OAuth2Error {
            OAuth2Error(code: .invalidConfiguration, message: "cannot use the configuration file \(path): \(reason)")
        }
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else {
            if errno == ENOENT { return nil }
            throw failure(String(cString: strerror(errno)))
        }
        defer { close(fd) }
        var status = stat()
        guard fstat(fd, &status) == 0 else { throw failure(String(cString: strerror(errno))) }
        guard status.st_mode & S_IFMT == S_IFREG else { throw failure("it is not a regular file") }
        guard status.st_uid == geteuid() else { throw failure("it belongs to another user") }
        guard status.st_mode & 0o022 == 0 else {
            throw failure("group or others may write it (chmod 600 it)")
        }
        return try readAll(fd, limit: limit, failure: failure)
    }

    /// Writes `bytes` to `name` in `directory` with mode 0600, atomically,
    /// creating the directory (mode 0700) when missing.
    ///
    /// - Throws: `invalid_configuration` when the directory cannot be created,
    ///   is open to group or others, or the file cannot be written.
    static func write(_ bytes: [UInt8], name: String, in directory: String) throws(OAuth2Error) {
        func failure(_ what: String, _ path: String) -> OAuth2Error {
            OAuth2Error(
                code: .invalidConfiguration, message: "cannot \(what) \(path): \(String(cString: strerror(errno)))")
        }
        try makeDirectory(directory)
        var status = stat()
        guard stat(directory, &status) == 0 else { throw failure("read", directory) }
        guard status.st_mode & 0o077 == 0 else {
            throw OAuth2Error(
                code: .invalidConfiguration,
                message:
                    "the configuration directory \(directory) is open to group or others (mode \(String(status.st_mode & 0o777, radix: 8))); run chmod 700 on it"
            )
        }
        let target = directory + "/" + name
        let random = SecureRandom.hex(8)
        let temporary = directory + "/." + name + "." + random + ".tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw failure("create", temporary) }
        var done = false
        defer {
            if !done { unlink(temporary) }
        }
        // The mode given to open passed through the umask; set it outright.
        guard fchmod(fd, 0o600) == 0 else {
            close(fd)
            throw failure("set the mode of", temporary)
        }
        var offset = 0
        while offset < bytes.count {
            let count = bytes[offset...].withUnsafeBytes { posixWrite(fd, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else {
                close(fd)
                throw failure("write", temporary)
            }
            offset += count
        }
        guard fsync(fd) == 0 else {
            close(fd)
            throw failure("sync", temporary)
        }
        close(fd)
        guard rename(temporary, target) == 0 else { throw failure("replace", target) }
        done = true
        // The rename itself is durable once the directory is synced.
        let directoryFD = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if directoryFD >= 0 {
            _ = fsync(directoryFD)
            close(directoryFD)
        }
    }

    /// `mkdir -p` with mode 0700 for every directory it creates.
    private static func makeDirectory(_ path: String) throws(OAuth2Error) {
        var status = stat()
        if stat(path, &status) == 0 { return }
        if let slash = path.lastIndex(of: "/"), slash != path.startIndex {
            try makeDirectory(String(path[..<slash]))
        }
        if mkdir(path, 0o700) != 0 && errno != EEXIST {
            throw OAuth2Error(
                code: .invalidConfiguration,
                message: "cannot create the configuration directory \(path): \(String(cString: strerror(errno)))")
        }
    }
}

/// Random hex for temporary file names, from the system's generator.
enum SecureRandom {
    static func hex(_ count: Int) -> String {
        var bytes = [UInt8](repeating: 0, count: count)
        var generator = SystemRandomNumberGenerator()
        for index in bytes.indices { bytes[index] = UInt8.random(in: 0...255, using: &generator) }
        return bytes.map { byte in
            let digits = Array("0123456789abcdef")
            return String([digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]])
        }.joined()
    }
}

/// Everything `fd` holds, at most `limit` bytes: the CLI's files (its
/// configuration, a secret) are read whole, never past a bound.
///
/// - Throws: `failure` of the reason when a read fails or the file is over `limit`.
func readAll(_ fd: Int32, limit: Int, failure: (String) -> OAuth2Error) throws(OAuth2Error) -> [UInt8] {
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 16 * 1024)
    while true {
        let count = chunk.withUnsafeMutableBytes { posixRead(fd, $0.baseAddress, $0.count) }
        if count < 0 {
            if errno == EINTR { continue }
            throw failure(String(cString: strerror(errno)))
        }
        if count == 0 { break }
        bytes.append(contentsOf: chunk[0..<count])
        guard bytes.count <= limit else { throw failure("it is over \(limit) bytes") }
    }
    return bytes
}

private func posixRead(_ fd: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int) -> Int {
    #if canImport(Darwin)
    Darwin.read(fd, buffer, count)
    #elseif canImport(Glibc)
    Glibc.read(fd, buffer, count)
    #else
    Musl.read(fd, buffer, count)
    #endif
}

private func posixWrite(_ fd: Int32, _ buffer: UnsafeRawPointer?, _ count: Int) -> Int {
    #if canImport(Darwin)
    Darwin.write(fd, buffer, count)
    #elseif canImport(Glibc)
    Glibc.write(fd, buffer, count)
    #else
    Musl.write(fd, buffer, count)
    #endif
}
