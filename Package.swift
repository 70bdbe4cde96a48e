// swift-tools-version:6.0
// push-connector: FCM push delivery driven by RabbitMQ. See README.md and docs/ARCHITECTURE.md.
import PackageDescription

/// Warnings are errors in CI (`swift build -Xswiftc -warnings-as-errors`); the language mode is 6
/// everywhere, so strict concurrency checking is complete.
let swiftSettings: [SwiftSetting] = []

let package = Package(
    name: "push-connector",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "push-connector", targets: ["push-connector"]),
        .executable(name: "fcm-emulator", targets: ["fcm-emulator"]),
        .library(name: "PushCore", targets: ["PushCore"]),
    ],
    targets: [
        // System C libraries from Debian. Shims hold only includes and non-variadic wrappers.
        .systemLibrary(name: "CRabbitMQ", pkgConfig: "librabbitmq", providers: [.apt(["librabbitmq-dev"])]),
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        .systemLibrary(name: "COpenSSL", pkgConfig: "openssl", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CNGHTTP2", pkgConfig: "libnghttp2", providers: [.apt(["libnghttp2-dev"])]),
        .systemLibrary(name: "CMicroHTTPD", pkgConfig: "libmicrohttpd", providers: [.apt(["libmicrohttpd-dev"])]),
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(name: "CPostgres", pkgConfig: "libpq", providers: [.apt(["libpq-dev"])]),
        .systemLibrary(name: "CSystem"),

        // Pure core: domain, JSON, composition, validation, policies. No I/O.
        .target(name: "PushCore", swiftSettings: swiftSettings, linkerSettings: [.linkedLibrary("m")]),
        // Runtime support: the OS threads of the loops that block.
        .target(name: "OSThread", dependencies: ["CSystem"], swiftSettings: swiftSettings),
        // Adapters.
        .target(name: "FCM", dependencies: ["PushCore", "OSThread", "CCurl", "COpenSSL", "CNGHTTP2"], swiftSettings: swiftSettings),
        .target(name: "AMQP", dependencies: ["PushCore", "OSThread", "CRabbitMQ", "COpenSSL"], swiftSettings: swiftSettings),
        // Test support: one real RabbitMQ node per test process (scripts/test-broker.sh).
        .target(name: "BrokerHarness", dependencies: ["AMQP", "OSThread"], swiftSettings: swiftSettings),
        // The emulator deliberately does not depend on PushCore: its validation is written
        // independently, so that a bug shared with the composer cannot hide itself.
        .target(name: "EmulatorKit", dependencies: ["CNGHTTP2", "COpenSSL"], swiftSettings: swiftSettings),
        // What every long-running command runs on: logging, metrics, signals, start/drain/stop
        // (Service, ServiceGroup), backoff. Knows nothing of jobs, FCM or the broker.
        // argv as glibc gives it to initializers: CommandLine.arguments loses it under an LD_PRELOAD
        // that moves the environment (libfaketime).
        .target(name: "CProcessArguments", path: "Sources/CProcessArguments"),
        .target(name: "ServiceRuntime", dependencies: ["PushCore", "CSystem", "CProcessArguments"], swiftSettings: swiftSettings),
        // Adapter: the small HTTP server (libmicrohttpd) of the events endpoint and the worker's
        // /healthz, /readyz, /metrics; and the probe `health` uses (libcurl).
        .target(name: "HTTPServer", dependencies: ["ServiceRuntime", "OSThread", "CMicroHTTPD", "CCurl"], swiftSettings: swiftSettings),
        // Adapter: where the events service stores sends and events (SQLite or PostgreSQL behind
        // EventStoring) and what `stats` reads back (the funnel).
        .target(name: "EventStorage", dependencies: ["PushCore", "ServiceRuntime", "CSQLite", "CPostgres"], swiftSettings: swiftSettings),
        // The App ID file and the credentials it names, read and checked (file and field named),
        // and watched for changes: what the worker, the events service and the commands load.
        .target(name: "ConfigurationFiles", dependencies: ["PushCore", "FCM", "ServiceRuntime"], swiftSettings: swiftSettings),
        // The command line: options declared once (OptionKey, OptionSpec) and resolved from the
        // command line, the environment and a settings file; the options several commands share.
        .target(name: "CLIKit", dependencies: ["PushCore", "AMQP", "FCM", "ServiceRuntime"], swiftSettings: swiftSettings),
        // The send worker: lanes that consume jobs, send them through FCM, publish results, retry
        // and dead-letter; the fleet's control log and quota sharing.
        .target(name: "PushWorker",
                dependencies: ["PushCore", "OSThread", "FCM", "AMQP", "ServiceRuntime", "HTTPServer", "ConfigurationFiles"],
                swiftSettings: swiftSettings),
        // The events service: POST /event(s) from apps, the events queue and the results stream
        // consumed into the event store.
        .target(name: "PushEvents",
                dependencies: ["PushCore", "AMQP", "ServiceRuntime", "HTTPServer", "EventStorage", "ConfigurationFiles"],
                swiftSettings: swiftSettings),
        // The dead-letter queues' tools: list, stats, export, import, replay, purge (jobs and events).
        .target(name: "DeadLetterTools", dependencies: ["PushCore", "AMQP", "ServiceRuntime", "CLIKit"], swiftSettings: swiftSettings),
        // Pipelines and operator tools wired from the adapters.
        .target(name: "Connector",
                dependencies: ["ServiceRuntime", "HTTPServer", "EventStorage", "ConfigurationFiles", "CLIKit", "PushWorker", "PushEvents", "DeadLetterTools", "PushCore", "OSThread", "FCM", "AMQP", "CCurl", "CMicroHTTPD", "CSQLite", "CPostgres", "CSystem"],
                swiftSettings: swiftSettings),
        // Thin executables: parse arguments, wire, run.
        .executableTarget(name: "push-connector", dependencies: ["Connector", "ServiceRuntime"], swiftSettings: swiftSettings),
        .executableTarget(name: "fcm-emulator", dependencies: ["EmulatorKit", "TestProcessSetup", "CProcessArguments"], swiftSettings: swiftSettings),
        // Benchmark driver for the FCM client (bench/fcm/run.sh runs it against fcm-emulator).
        .executableTarget(name: "fcm-bench", dependencies: ["FCM"], path: "bench/fcm/Sources",
                          swiftSettings: swiftSettings),
        // bench/amqp: publish-with-confirm and consume+ack throughput against a real broker.
        // bench/worker: the send worker end to end, real dispatch vs an instant "sent".
        .executableTarget(name: "worker-bench", dependencies: ["Connector", "ServiceRuntime", "ConfigurationFiles", "CLIKit", "PushWorker", "FCM", "AMQP"], path: "bench/worker/Sources",
                          swiftSettings: swiftSettings),
        .executableTarget(name: "amqp-bench", dependencies: ["AMQP"], path: "bench/amqp/Sources", swiftSettings: swiftSettings),

        // Every test binary ignores SIGPIPE as the shipped binaries do (a constructor, before any test).
        .target(name: "TestProcessSetup", path: "Sources/TestProcessSetup"),

        .testTarget(name: "PushCoreTests", dependencies: ["PushCore", "TestProcessSetup"], swiftSettings: swiftSettings),
        .testTarget(name: "FCMTests", dependencies: ["FCM", "OSThread", "EmulatorKit", "BrokerHarness", "TestProcessSetup"], swiftSettings: swiftSettings),
        .testTarget(name: "AMQPTests", dependencies: ["AMQP", "OSThread", "BrokerHarness", "TestProcessSetup"], swiftSettings: swiftSettings),
        .testTarget(name: "EmulatorKitTests", dependencies: ["EmulatorKit", "TestProcessSetup"], swiftSettings: swiftSettings),
        .testTarget(name: "ServiceRuntimeTests", dependencies: ["ServiceRuntime", "PushCore", "TestProcessSetup"], swiftSettings: swiftSettings),
        .testTarget(name: "ConnectorTests", dependencies: ["Connector", "ServiceRuntime", "HTTPServer", "EventStorage", "ConfigurationFiles", "CLIKit", "PushWorker", "PushEvents", "DeadLetterTools", "EmulatorKit", "BrokerHarness", "TestProcessSetup"], swiftSettings: swiftSettings),
    ],
    swiftLanguageModes: [.v6]
)
