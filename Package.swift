// swift-tools-version:6.0
// ChatLink: a WebSocket chat daemon for Linux (chatlinkd) and its control command (chatlinkctl).
// No package dependencies: nothing can be fetched on the build machines. C libraries come from
// Debian's -dev packages through system-library targets.
import PackageDescription

let strict: [SwiftSetting] = [.swiftLanguageMode(.v6)]

let package = Package(
  name: "ChatLink",
  products: [
    .executable(name: "chatlinkd", targets: ["chatlinkd"]),
    .executable(name: "chatlinkctl", targets: ["chatlinkctl"]),
    .executable(name: "chatlink-autobahn", targets: ["chatlink-autobahn"]),
    .executable(name: "chatlink-devserver", targets: ["chatlink-devserver"]),
    .library(name: "WebSocket", targets: ["WebSocket"]),
  ],
  targets: [
    .systemLibrary(
      name: "CSystemd", pkgConfig: "libsystemd", providers: [.apt(["libsystemd-dev"])]),
    // glibc and Linux interfaces the Glibc module does not export (malloc tuning, thread names,
    // peer credentials, getrandom); headers only, nothing to link.
    .systemLibrary(name: "CSystem"),
    // Headers only, no pkgConfig: libssl is loaded with dlopen for wss:// (see its shim.h).
    .systemLibrary(name: "COpenSSL", providers: [.apt(["libssl-dev"])]),
    .systemLibrary(name: "CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),
    .systemLibrary(name: "CExpat", pkgConfig: "expat", providers: [.apt(["libexpat1-dev"])]),
    // The dedupe window's bucket scan with SSE2 (a portable loop elsewhere); header only.
    .systemLibrary(name: "CBucket"),

    // RFC 6455 / RFC 7692, pure: no sockets, no clocks, no threads.
    .target(name: "WebSocket", dependencies: ["CZlib", "CSystem", "JSON"], swiftSettings: strict),
    // sd-event wrapper, sd_notify, journald logging.
    .target(name: "EventLoop", dependencies: ["CSystemd", "CSystem"], swiftSettings: strict),
    // Non-blocking TCP (IPv6/IPv4), DNS off the loop, TLS.
    .target(
      name: "Transport", dependencies: ["EventLoop", "COpenSSL", "CSystem"], swiftSettings: strict),
    // Drives a WebSocket.ClientConnection over a Transport stream on the loop.
    .target(
      name: "WebSocketClient", dependencies: ["WebSocket", "Transport", "EventLoop", "JSON"],
      swiftSettings: strict),

    // JSON: a validating scanner for hot paths, escaping, and a small value tree.
    .target(
      name: "JSON", dependencies: [], swiftSettings: strict,
      linkerSettings: [.linkedLibrary("m")]),
    // The Varlink wire format (framing, calls, replies, errors), shared by daemon and ctl.
    .target(name: "Varlink", dependencies: ["JSON"], swiftSettings: strict),
    // The io.chatlink.Daemon contract, pure: its interface description and a Swift type for
    // every method's parameters and reply, its errors and its events.
    .target(name: "ChatLinkAPI", dependencies: ["Varlink", "JSON"], swiftSettings: strict),
    // A typed client of io.chatlink.Daemon, for chatlinkctl and any other Swift tool.
    .target(
      name: "ChatLinkClient", dependencies: ["ChatLinkAPI", "Varlink", "JSON"],
      swiftSettings: strict),
    // chatlinkctl's verbs, output formatting and a small swift-argument-parser-shaped parser.
    .target(
      name: "ChatLinkCommands", dependencies: ["ChatLinkClient", "ChatLinkAPI", "JSON", "Varlink"],
      swiftSettings: strict),

    // The backend link as pure parts: the state machine, reconnect policy, delivery ledger,
    // keepalive and the backend-protocol seam with its dialects. No I/O, no clocks, no threads.
    .target(name: "LinkCore", dependencies: ["WebSocket", "JSON", "XMPP"], swiftSettings: strict),
    // XMPP's wire as pure parts: frames parsed with expat (restricted XML), the writer, SASL.
    // No I/O, no clocks, no threads; randomness and crypto are handed in.
    .target(name: "XMPP", dependencies: ["CExpat", "WebSocket"], swiftSettings: strict),

    // The daemon's logic: config, the link's driver, store, outbox, control server, manager.
    .target(
      name: "ChatLinkDaemon",
      dependencies: [
        "LinkCore", "WebSocket", "WebSocketClient", "Transport", "EventLoop", "JSON", "Varlink",
        "ChatLinkAPI", "CSystem", "XMPP", "CBucket",
      ],
      swiftSettings: strict),

    .executableTarget(
      name: "chatlinkd", dependencies: ["ChatLinkDaemon", "ChatLinkAPI", "EventLoop"],
      swiftSettings: strict),
    .executableTarget(
      name: "chatlinkctl", dependencies: ["ChatLinkCommands"], swiftSettings: strict),
    .executableTarget(
      name: "chatlink-autobahn",
      dependencies: ["WebSocketClient", "WebSocket", "Transport", "EventLoop"],
      swiftSettings: strict),

    .executableTarget(
      name: "chatlink-devserver",
      dependencies: ["LinkCore", "JSON", "WebSocket", "Transport", "EventLoop"],
      swiftSettings: strict),

    // What the Swift test targets share: a deterministic generator (SplitMix64), loop
    // spinning, temporary directories, a JSON literal helper, a WebSocket backend on loopback
    // (TestBackend) and a stand-in control socket (FakeDaemon). A regular target so test
    // targets can import it; only test targets may depend on it (scripts/check-imports.py),
    // so it is never linked into a product.
    .target(
      name: "TestSupport",
      dependencies: ["EventLoop", "Transport", "WebSocket", "Varlink", "JSON"],
      path: "Tests/TestSupport", swiftSettings: strict),

    .testTarget(name: "JSONTests", dependencies: ["JSON"], swiftSettings: strict),
    .testTarget(
      name: "WebSocketTests", dependencies: ["WebSocket", "JSON", "TestSupport"],
      swiftSettings: strict),
    .testTarget(name: "VarlinkTests", dependencies: ["Varlink", "JSON"], swiftSettings: strict),
    .testTarget(
      name: "LinkCoreTests",
      dependencies: ["LinkCore", "WebSocket", "JSON", "XMPP", "Transport", "TestSupport"],
      swiftSettings: strict),
    .testTarget(
      name: "XMPPTests", dependencies: ["XMPP", "WebSocket", "Transport", "TestSupport"],
      swiftSettings: strict),
    .testTarget(
      name: "ChatLinkAPITests", dependencies: ["ChatLinkAPI", "Varlink", "JSON", "TestSupport"],
      swiftSettings: strict),
    .testTarget(
      name: "ChatLinkDaemonTests",
      dependencies: [
        "ChatLinkDaemon", "ChatLinkAPI", "Varlink", "LinkCore", "JSON", "WebSocket",
        "Transport", "EventLoop", "XMPP", "TestSupport", "CBucket",
      ],
      swiftSettings: strict),
    .testTarget(
      name: "ChatLinkClientTests",
      dependencies: ["ChatLinkClient", "ChatLinkAPI", "Varlink", "JSON", "TestSupport"],
      swiftSettings: strict),
    .testTarget(
      name: "ChatLinkCommandsTests",
      dependencies: [
        "ChatLinkCommands", "ChatLinkClient", "ChatLinkAPI", "Varlink", "JSON", "TestSupport",
      ],
      swiftSettings: strict),
    .testTarget(
      name: "EventLoopTests", dependencies: ["EventLoop", "TestSupport"], swiftSettings: strict),
    .testTarget(
      name: "TransportTests", dependencies: ["Transport", "EventLoop", "CSystem", "TestSupport"],
      swiftSettings: strict),
    .testTarget(
      name: "WebSocketClientTests",
      dependencies: [
        "WebSocketClient", "WebSocket", "Transport", "EventLoop", "JSON", "TestSupport",
      ],
      swiftSettings: strict),
  ]
)
