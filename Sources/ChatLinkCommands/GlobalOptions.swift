import ChatLinkAPI
import ChatLinkClient

/// The options every verb takes, before or after the verb: `--socket PATH`, `--instance NAME`
/// and `--json`.
public struct GlobalOptions: ParsableArguments {
  /// The environment variable that replaces the default socket path.
  public static let socketVariable = "CHATLINK_SOCKET"

  @Option(
    help:
      "The daemon's control socket (default: \(ChatLinkClient.defaultSocket), or $CHATLINK_SOCKET when set).",
    valueName: "path")
  public var socket: String?

  @Option(
    name: .shortAndLong,
    help:
      "The instance chatlinkd@NAME: its socket \(Instance.runtimeDirectory)/NAME.sock (or $CHATLINK_INSTANCE when set).",
    valueName: "name")
  public var instance: String?

  @Flag(help: "Print one compact JSON object per line, with stable field names.")
  public var json = false

  /// Options at their defaults.
  public init() {}

  /// --socket, else --instance, else $CHATLINK_SOCKET, else $CHATLINK_INSTANCE, else
  /// /run/chatlink/control.sock: what the command line says beats the environment.
  public func socketPath(_ context: CommandContext) throws(ClientError) -> String {
    if socket != nil && instance != nil {
      throw .badSocketChoice("--socket and --instance both name a socket; give one of them")
    }
    if let socket { return socket }
    if let instance { return try Self.instance(instance).controlSocket }
    if let path = context.environment[Self.socketVariable], !path.isEmpty { return path }
    if let name = context.environment[Instance.environmentVariable], !name.isEmpty {
      return try Self.instance(name, from: "$" + Instance.environmentVariable).controlSocket
    }
    return ChatLinkClient.defaultSocket
  }

  private static func instance(_ name: String, from source: String = "--instance")
    throws(ClientError) -> Instance
  {
    do {
      return try Instance(name)
    } catch {
      throw .badSocketChoice("\(source): \(error)")
    }
  }

  /// Connects to the daemon.
  public func connect(_ context: CommandContext) throws(ClientError) -> ChatLinkClient {
    try ChatLinkClient(socketPath: socketPath(context))
  }
}
