import ChatLinkClient

/// The options every verb takes, before or after the verb: `--socket PATH` and `--json`.
public struct GlobalOptions: ParsableArguments {
  /// The environment variable that replaces the default socket path.
  public static let socketVariable = "CHATLINK_SOCKET"

  @Option(
    help:
      "The daemon's control socket (default: \(ChatLinkClient.defaultSocket), or $CHATLINK_SOCKET when set).",
    valueName: "path")
  public var socket: String?

  @Flag(help: "Print one compact JSON object per line, with stable field names.")
  public var json = false

  /// Options at their defaults.
  public init() {}

  /// --socket, else $CHATLINK_SOCKET, else /run/chatlink/control.sock.
  public func socketPath(_ context: CommandContext) -> String {
    if let socket { return socket }
    if let path = context.environment[Self.socketVariable], !path.isEmpty { return path }
    return ChatLinkClient.defaultSocket
  }

  /// Connects to the daemon.
  public func connect(_ context: CommandContext) throws(ClientError) -> ChatLinkClient {
    try ChatLinkClient(socketPath: socketPath(context))
  }
}
