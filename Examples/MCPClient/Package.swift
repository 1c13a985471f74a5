// swift-tools-version: 6.0
import PackageDescription

let strictSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny")
]

// The MCP Swift SDK and what it pulls (SwiftNIO, EventSource, swift-system)
// stay in this package: the library's own graph never sees them.
let package = Package(
    name: "MCPClient",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "swift-oauth2", path: "../.."),
        .package(url: "https://github.com/modelcontextprotocol/swift-sdk.git", exact: "0.12.1"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
    ],
    targets: [
        // The seam: the SDK's HTTPClientAuthorizer, answered by swift-oauth2's
        // ProtectedResourceClient.
        .target(
            name: "MCPClientCore",
            dependencies: [
                .product(name: "OAuth2", package: "swift-oauth2"),
                .product(name: "MCP", package: "swift-sdk"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "MCPClient",
            dependencies: [
                "MCPClientCore",
                .product(name: "OAuth2", package: "swift-oauth2"),
                .product(name: "OAuth2Loopback", package: "swift-oauth2"),
                .product(name: "MCP", package: "swift-sdk"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "MCPClientTests",
            dependencies: [
                "MCPClientCore",
                .product(name: "OAuth2", package: "swift-oauth2"),
                .product(name: "OAuth2Testing", package: "swift-oauth2"),
                .product(name: "OAuth2Loopback", package: "swift-oauth2"),
                .product(name: "MCP", package: "swift-sdk"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSettings
        ),
    ]
)
