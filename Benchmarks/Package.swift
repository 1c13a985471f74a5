// swift-tools-version: 6.0
// The benchmarks: a package of their own, so that building and testing the
// framework (and CI) never compiles them. It depends on the framework by path.
import PackageDescription

let package = Package(
    name: "swift-oauth2-benchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "swift-oauth2", path: ".."),
        // For PostgresClient, which the PostgreSQL store's rows run (the framework's own dependency, same version).
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
    ],
    targets: [
        // The hand-off floor (issue 15): Swift callers handing raw libcurl transfers to a thread, nothing else.
        .target(
            name: "CHandoffFloor",
            linkerSettings: [.linkedLibrary("curl")]
        ),
        .executableTarget(
            name: "handoff-floor",
            dependencies: ["CHandoffFloor", "BenchReport"]
        ),
        // How every Swift benchmark program measures and reports: clocks, CPU time,
        // peak RSS, latencies and the JSON result line. No dependencies, so the
        // hand-off floor links nothing of OAuth2.
        .target(name: "BenchReport"),
        // What the executables share: the server under test and its client.
        .target(
            name: "BenchCore",
            dependencies: [.product(name: "OAuth2", package: "swift-oauth2")],
            swiftSettings: [.enableUpcomingFeature("ExistentialAny")]
        ),
        // The start row for the library alone: OAuth2, no SwiftNIO.
        .executableTarget(
            name: "oauth2-start",
            dependencies: ["BenchCore", .product(name: "OAuth2", package: "swift-oauth2")],
            swiftSettings: [.enableUpcomingFeature("ExistentialAny")]
        ),
        // The benchmark a user would write (the public API of OAuth2, nothing
        // else), timed as a whole process: make bench's whole-process rows.
        .executableTarget(
            name: "user-bench",
            dependencies: [.product(name: "OAuth2", package: "swift-oauth2")],
            swiftSettings: [.enableUpcomingFeature("ExistentialAny")]
        ),
        .executableTarget(
            name: "oauth2-bench",
            dependencies: [
                "BenchCore",
                "BenchReport",
                .product(name: "OAuth2", package: "swift-oauth2"),
                // The PostgreSQL store's rows (issue 12): signed requests with it, and the storm across processes.
                .product(name: "OAuth2Postgres", package: "swift-oauth2"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ],
            swiftSettings: [.enableUpcomingFeature("ExistentialAny")]
        ),
    ]
)
