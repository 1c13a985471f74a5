// swift-tools-version: 6.0
// The benchmarks: a package of their own, so that building and testing the
// framework (and CI) never compiles them. It depends on the framework by path.
import PackageDescription

let package = Package(
    name: "swift-oauth2-benchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "swift-oauth2", path: ".."),
    ],
    targets: [
        .executableTarget(
            name: "oauth2-bench",
            dependencies: [.product(name: "OAuth2", package: "swift-oauth2")],
            swiftSettings: [.enableUpcomingFeature("ExistentialAny")]
        ),
    ]
)
