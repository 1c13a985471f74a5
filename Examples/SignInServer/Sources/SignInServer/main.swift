import Foundation
import Logging
import SignInServerCore

// The example's entry point: read the environment, refuse to start on a bad
// configuration (exit 78, EX_CONFIG), serve until SIGINT or SIGTERM.

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("SignInServer: \(message)\n".utf8))
    exit(78)
}

let configuration: SignInConfiguration
do {
    // With SIGNIN_DISCOVER=1 this reads the provider's metadata too.
    configuration = try await SignInConfiguration.load(environment: ProcessInfo.processInfo.environment)
} catch {
    fail("cannot start:\n\(error.description)\nSee Examples/SignInServer/README.md for the variables.")
}

let logger: Logger = {
    var logger = Logger(label: "SignInServer")
    logger.logLevel = ProcessInfo.processInfo.environment["LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:)) ?? .info
    return logger
}()

let app: SignInApp
do {
    app = try SignInApp(configuration: configuration, logger: logger)
} catch {
    fail("cannot start: \(error)")
}

if let database = configuration.database {
    logger.info("tokens and sessions in PostgreSQL, tables \(database.tokenTable) and \(database.sessionTable)")
}
let application = app.makeApplication { port in
    logger.info("listening on \(configuration.host):\(port); sign in at \(configuration.publicOrigin)/")
}
do {
    try await application.runService()
} catch {
    logger.error("stopped: \(error)")
}
await app.shutdown()
