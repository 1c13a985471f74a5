// MCPClient URL: an MCP client (the official MCP Swift SDK) whose requests
// swift-oauth2 authorizes. Starting from nothing but the endpoint's URL, the
// first run discovers the authorization server, identifies itself, signs the
// user in once through a loopback receiver, then calls `initialize` and one
// tool; a later run with the same store signs its requests at once.
//
// See README.md.
import Foundation
import Logging
import MCPClientCore
import OAuth2
import OAuth2Loopback

let usage = """
    usage: MCPClient URL [--store DIR] [--key-file PATH] [--tool NAME] [--account NAME] [--scope SCOPE]...
                         [--client-id ID] [--client-metadata-url URL] [--no-register]
                         [--require-stored-token] [--verbose]

    Calls the tool NAME (default: whoami) of the MCP server at URL, signing in
    when it asks for a token. The authorization URL to open is printed on stderr
    as a line "open: URL"; the tool's text goes to stdout.
      --store DIR            where tokens, registrations and discoveries are kept
                             (default: ~/.mcp-client-example)
      --key-file PATH        seal them with the AES-GCM key in PATH (32 bytes, hex or base64)
      --client-id ID         a client id registered by hand, used when the server
                             offers neither of the two below
      --client-metadata-url  identify with this client ID metadata document (https)
      --no-register          never register dynamically (RFC 7591)
      --require-stored-token fail instead of sending the user to sign in
    """

func fail(_ message: String, status: Int32 = 1) -> Never {
    FileHandle.standardError.write(Data("MCPClient: \(message)\n".utf8))
    exit(status)
}

var arguments = Array(CommandLine.arguments.dropFirst())
var endpointText: String?
var storePath = FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(".mcp-client-example").path
var keyFile: String?
var tool = "whoami"
var account = "default"
var scopes: [String] = []
var clientID: String?
var metadataURL: URL?
var register = true
var requireStoredToken = false
var verbose = false
while !arguments.isEmpty {
    let argument = arguments.removeFirst()
    func value() -> String {
        guard !arguments.isEmpty else { fail("\(argument) needs a value\n\(usage)", status: 64) }
        return arguments.removeFirst()
    }
    switch argument {
    case "--store": storePath = value()
    case "--key-file": keyFile = value()
    case "--tool": tool = value()
    case "--account": account = value()
    case "--scope": scopes.append(value())
    case "--client-id": clientID = value()
    case "--client-metadata-url":
        guard let url = URL(string: value()), url.scheme == "https" else { fail("--client-metadata-url needs an https URL", status: 64) }
        metadataURL = url
    case "--no-register": register = false
    case "--require-stored-token": requireStoredToken = true
    case "--verbose": verbose = true
    case "-h", "--help":
        print(usage)
        exit(0)
    default:
        guard endpointText == nil, !argument.hasPrefix("-") else { fail("unknown argument \(argument)\n\(usage)", status: 64) }
        endpointText = argument
    }
}
guard let endpointText, let endpoint = URL(string: endpointText), endpoint.host != nil else {
    fail("give the MCP endpoint's URL\n\(usage)", status: 64)
}

LoggingSystem.bootstrap { label in
    var handler = StreamLogHandler.standardError(label: label)
    handler.logLevel = verbose ? .debug : .warning
    return handler
}

let identity = ClientIdentity(
    metadataDocumentURL: metadataURL,
    registrationMetadata: register
        ? ClientMetadata(
            redirectURIs: [URL(string: "http://127.0.0.1/callback")!], clientName: "swift-oauth2 MCP example",
            softwareID: "swift-oauth2-mcp-example")
        : nil,
    clientID: clientID)

var authorizerForErrors: ProtectedResourceAuthorizer?
do {
    let store = try FileTokenStore(
        directory: storePath, encryption: try keyFile.map { .aesGCM(try .fromFile(atPath: $0)) } ?? .plaintext)
    let authorizer = try ProtectedResourceAuthorizer(
        identity: identity,
        redirectHandler: requireStoredToken
            ? nil
            : try LoopbackRedirectHandler(redirectURI: URL(string: "http://127.0.0.1/callback")!, applicationName: "MCPClient") {
                url in FileHandle.standardError.write(Data("open: \(url.absoluteString)\n".utf8))
            },
        store: store,
        account: account,
        options: ProtectedResourceClient.Options(scopes: scopes.isEmpty ? nil : scopes),
        transport: CurlTransport(),
        logger: Logger(label: "mcp-client"))
    authorizerForErrors = authorizer
    let result = try await callTool(at: endpoint, authorizer: authorizer, tool: tool)
    FileHandle.standardError.write(Data("server: \(result.serverName) (MCP \(result.protocolVersion))\n".utf8))
    print(result.text)
    exit(result.isError ? 2 : 0)
} catch {
    // The SDK wraps the library's error; the authorizer kept it.
    if let authorizer = authorizerForErrors, let cause = authorizer.lastError {
        fail("\(cause)")
    }
    fail("\(error)")
}
