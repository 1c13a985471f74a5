// swift-tools-version: 6.0
import PackageDescription

let strictSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny")
]

/// The libraries' settings: on top of the strict ones, every import is
/// internal unless declared `public import` (a library's dependencies are
/// not its users' namespace), and a member is visible only where its module
/// is imported.
let librarySettings: [SwiftSetting] =
    strictSettings + [
        .enableUpcomingFeature("InternalImportsByDefault"),
        .enableUpcomingFeature("MemberImportVisibility"),
    ]

let package = Package(
    name: "swift-oauth2",
    platforms: [.macOS(.v14)],
    products: [
        .library(name: "OAuth2", targets: ["OAuth2"]),
        .library(name: "OAuth2Testing", targets: ["OAuth2Testing"]),
        .library(name: "OAuth2Loopback", targets: ["OAuth2Loopback"]),
        .library(name: "OAuth2Postgres", targets: ["OAuth2Postgres"]),
        .library(name: "OAuth2OpenAPI", targets: ["OAuth2OpenAPI"]),
        .executable(name: "oauth2", targets: ["oauth2"]),
        .executable(name: "oauth2-postgres", targets: ["oauth2-postgres"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-crypto.git", "3.12.3"..<"5.0.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-distributed-tracing.git", from: "1.7.3"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        // `make docs` (scripts/docs.sh): a command plugin only, no target
        // depends on it, so it adds nothing to an app's build.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
        // OAuth2OpenAPI only: an app that does not use that product never builds it.
        .package(url: "https://github.com/apple/swift-openapi-runtime.git", from: "1.13.4"),
    ],
    targets: [
        // libcurl's headers (Debian: libcurl4-openssl-dev), and libcurl itself
        // opened when the first transport starts, not linked: a program that
        // sends nothing loads none of its 32 libraries (CCurl.h).
        .target(
            name: "CCurl",
            path: "Sources/CCurl"
        ),
        .target(
            name: "OAuth2",
            dependencies: [
                "CCurl",
                .product(name: "Crypto", package: "swift-crypto"),
                // RSA (RS256, PS256) for JWS; the rest of JOSE is in Crypto.
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                // The HTTP vocabulary (HTTPFields, statuses, methods) shared with
                // Hummingbird and swift-openapi-runtime; pure Swift, no SwiftNIO.
                .product(name: "HTTPTypes", package: "swift-http-types"),
                // Metrics and spans (OAuth2Telemetry): API packages only, no-ops
                // until the app bootstraps a backend; neither pulls SwiftNIO.
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ],
            swiftSettings: librarySettings
        ),
        .target(
            name: "OAuth2Testing",
            dependencies: ["OAuth2"],
            swiftSettings: librarySettings
        ),
        // The RFC 8252 redirect receiver for command-line apps: OAuth2 and the
        // C library only, so using it adds no package to an app's build.
        .target(
            name: "OAuth2Loopback",
            dependencies: ["OAuth2"],
            swiftSettings: librarySettings
        ),
        // The PostgreSQL token store: postgres-nio (and so SwiftNIO) is built
        // only by an app that uses this product, never for OAuth2 alone.
        .target(
            name: "OAuth2Postgres",
            dependencies: [
                "OAuth2",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: librarySettings
        ),
        // Signing and sending for clients made by swift-openapi-generator: the
        // runtime and HTTP types only (no SwiftNIO, so no AsyncHTTPClient
        // transport), built only by an app that uses this product.
        .target(
            name: "OAuth2OpenAPI",
            dependencies: [
                "OAuth2",
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            swiftSettings: librarySettings
        ),
        // The CLI's commands, shared by `oauth2` and `oauth2-postgres`:
        // FoundationEssentials only, and no database driver.
        .target(
            name: "OAuth2CLI",
            dependencies: [
                "OAuth2",
                "OAuth2Loopback",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Examples/oauth2/OAuth2CLI",
            swiftSettings: strictSettings
        ),
        // `oauth2`: starts without SwiftNIO, full Foundation or ICU; hands a
        // command with a PostgreSQL store to `oauth2-postgres` beside it.
        .executableTarget(
            name: "oauth2",
            dependencies: ["OAuth2CLI"],
            path: "Examples/oauth2/oauth2",
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "oauth2-postgres",
            dependencies: [
                "OAuth2CLI",
                "OAuth2",
                "OAuth2Postgres",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ],
            path: "Examples/oauth2/oauth2-postgres",
            swiftSettings: strictSettings
        ),
        // The fuzz targets (README, "Fuzzing"): this build replays Fuzz/Corpus
        // (`make test`); scripts/fuzz.sh builds the same sources with -DFUZZING
        // under libFuzzer (`make fuzz`). Uses the package-level internals of
        // OAuth2, and Foundation, which the library itself must not.
        .executableTarget(
            name: "oauth2-fuzz",
            dependencies: ["OAuth2", "CCurl"],
            path: "Fuzz/Sources",
            swiftSettings: strictSettings,
            // HostTarget compares with libcurl's own URL parser, called directly.
            linkerSettings: [.linkedLibrary("curl")]
        ),
        .testTarget(
            name: "OAuth2Tests",
            dependencies: [
                "OAuth2",
                "OAuth2Testing",
                "MutualTLSFixture",
                "ChildProcesses",
                // The backends swift-metrics and swift-distributed-tracing ship for tests.
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
                // The JOSE tests make keys (RSA, EC, Ed25519) to sign and verify with.
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ],
            swiftSettings: strictSettings
        ),
        // Drives the built `oauth2` binary against the local provider; `make test`
        // starts the providers and passes their env.json paths (Tests/IntegrationTests/Support/Provider.swift).
        .testTarget(
            name: "IntegrationTests",
            dependencies: [
                "OAuth2", "OAuth2Testing", "MutualTLSFixture", "LoopbackSockets", "ChildProcesses",
                // Client keys for the RFC 7523 tests.
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "OAuth2LoopbackTests",
            dependencies: ["OAuth2Loopback", "OAuth2", "OAuth2Testing", "LoopbackSockets"],
            swiftSettings: strictSettings
        ),
        // Against a real PostgreSQL (`make test` starts one: scripts/postgres.sh).
        .testTarget(
            name: "OAuth2PostgresTests",
            dependencies: [
                "OAuth2Postgres", "OAuth2", "OAuth2Testing", "LoopbackSockets", "ChildProcesses",
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ],
            swiftSettings: strictSettings
        ),
        // The crash tests' child process: saves a token and stops at a chosen
        // step of the save for the parent to SIGKILL it there. Built with the
        // tests (`swift build --build-tests`); not a product.
        .executableTarget(
            name: "StoreCrashChild",
            dependencies: ["OAuth2"],
            path: "Tests/StoreCrashChild",
            swiftSettings: strictSettings
        ),
        // The allocation gate (BENCHMARKS.md, "The allocation gate"): a
        // replacement of malloc that counts, linked into the gate's child
        // only; the child runs the hot paths and prints what they allocated;
        // the test holds them to the thresholds committed beside it.
        .target(
            name: "CAllocationCounter",
            path: "Tests/CAllocationCounter"
        ),
        .executableTarget(
            name: "AllocationGateChild",
            dependencies: ["OAuth2", "CAllocationCounter"],
            path: "Tests/AllocationGateChild",
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "AllocationGateTests",
            dependencies: ["ChildProcesses"],
            swiftSettings: strictSettings
        ),
        // Kills StoreCrashChild at every step of a save and reads what it left.
        .testTarget(
            name: "StoreCrashTests",
            dependencies: ["OAuth2", "ChildProcesses"],
            swiftSettings: strictSettings
        ),
        // A client generated by swift-openapi-generator (Generated/, made by
        // scripts/generate-openapi.sh) against the local provider.
        .testTarget(
            name: "OAuth2OpenAPITests",
            dependencies: [
                "OAuth2OpenAPI", "OAuth2", "OAuth2Testing", "MutualTLSFixture",
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
                // The client's own token requests, counted by its metrics.
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            exclude: ["openapi.yaml", "openapi-generator-config.yaml"],
            swiftSettings: strictSettings
        ),
        // nginx asking for client certificates, with a throw-away CA: the one
        // TLS server both the transport's and the CLI's mutual TLS tests use;
        // and the fixed client certificates of the tests that need no server.
        // Not a product, and no library depends on it.
        .target(
            name: "MutualTLSFixture",
            dependencies: ["OAuth2", "LoopbackSockets", "ChildProcesses"],
            path: "Tests/MutualTLSFixture",
            swiftSettings: strictSettings
        ),
        // Child processes started with posix_spawn, and reads that go on
        // through EINTR: what the tests start servers, the CLI and tools with
        // instead of Foundation's Process (Tests/ChildProcesses/ChildProcess.swift
        // says why). Not a product, and no library depends on it.
        .target(
            name: "CChildProcess",
            path: "Tests/CChildProcess"
        ),
        .target(
            name: "ChildProcesses",
            dependencies: ["CChildProcess"],
            path: "Tests/ChildProcesses",
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "ChildProcessesTests",
            dependencies: ["ChildProcesses"],
            swiftSettings: strictSettings
        ),
        // TCP sockets on 127.0.0.1 at a port the kernel picks, and a server
        // on one that serves each connection on a thread of its own: what the
        // tests' own small servers and their closed ports are made of, and
        // an app's back-channel logout route. Not a product, and no library
        // depends on it.
        .target(
            name: "LoopbackSockets",
            dependencies: ["OAuth2"],
            path: "Tests/LoopbackSockets",
            swiftSettings: strictSettings
        ),
        // The OpenID Foundation's relying-party test modules (oidcc-client-test-*),
        // each against Provider/op.py behaving as that module describes
        // (Tests/ConformanceTests/README.md); the FAPI 2.0 client modules go here too.
        .testTarget(
            name: "ConformanceTests",
            dependencies: ["OAuth2", "OAuth2Testing", "LoopbackSockets", "ChildProcesses"],
            exclude: ["Provider", "README.md"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "TransportTests",
            dependencies: ["OAuth2", "MutualTLSFixture", "LoopbackSockets", "ChildProcesses"],
            exclude: ["Server"],
            swiftSettings: strictSettings
        ),
    ]
)
