import Foundation
import MCP

/// What one run of the example got from the MCP server.
public struct MCPToolCallResult: Sendable {
    /// The server's name, from `initialize`.
    public var serverName: String
    /// The protocol version the server chose.
    public var protocolVersion: String
    /// The tool's text content, joined.
    public var text: String
    /// Whether the server said the tool failed.
    public var isError: Bool
}

/// Connects the MCP SDK's client to `endpoint` over streamable HTTP, every
/// request authorized by `authorizer`, then calls `tool`.
///
/// The transport does not stream (`streaming: false`): on Linux the SDK's
/// HTTP transport reads no server-sent events, so the server answers JSON.
public func callTool(
    at endpoint: URL,
    authorizer: ProtectedResourceAuthorizer,
    tool: String,
    arguments: [String: Value]? = nil
) async throws -> MCPToolCallResult {
    let transport = HTTPClientTransport(endpoint: endpoint, streaming: false, authorizer: authorizer)
    let client = Client(name: "swift-oauth2-mcp-example", version: "1.0")
    let initialized = try await client.connect(transport: transport)
    do {
        let (content, isError) = try await client.callTool(name: tool, arguments: arguments)
        await client.disconnect()
        let text = content.compactMap { item -> String? in
            if case .text(let text, _, _) = item { return text }
            return nil
        }.joined(separator: "\n")
        return MCPToolCallResult(
            serverName: initialized.serverInfo.name, protocolVersion: initialized.protocolVersion, text: text,
            isError: isError ?? false)
    } catch {
        await client.disconnect()
        throw error
    }
}
