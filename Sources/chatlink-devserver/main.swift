// chatlink-devserver: the bundled local chat backend (the envelope protocol, or Socket.IO) for
// demos, tests and benchmarks, on the WebSocket module's server role.
import EventLoop
@preconcurrency import Glibc

let usage = """
  USAGE: chatlink-devserver [--host 127.0.0.1] [--port 8765] [--protocol envelope|socketio]
                            [--token-file FILE] [--chatter SECONDS] [--history N]
                            [--flood N [--flood-size BYTES] [--flood-room R]]
                            [--ping-interval MS] [--ping-timeout MS] [--max-payload BYTES]

  A small chat backend. Clients join rooms, send messages, and every member of the room, the
  sender included, receives the message with the sender's client_id.

  --protocol envelope (the default): JSON envelopes on any path, e.g.
  {"event":"join-room","data":{"room_id":7}}, "send-message"; members receive
  {"event":"message","data":{…}}. Pings are answered.

  --protocol socketio: Socket.IO 5 over Engine.IO 4, WebSocket transport only, at
  /socket.io/?EIO=4&transport=websocket. Events join-room and leave-room ({"room_id":7}) and
  send-message (the envelope's data object) are acknowledged with [{"ok":true}]; a message
  starting with "reject:" is acknowledged with [{"error":"rejected by the devserver"}].
  Members receive ["message",{…}]. Any namespace is served.

  Catch-up (both protocols; chatlinkd's [Envelope] IDField=msg_id and SinceField=since): every
  message of a room gets an id, "msg_id":"<run>-<n>" (n counts the room's messages from 1;
  <run> is drawn at start, so ids never repeat across restarts), and the room's last N
  messages are kept (--history). A join with "since":"<id>" ({"room_id":7,"since":"…"}) is
  first sent the room's messages after that id, in order, then live ones. When the id is
  older than what is kept, or of another run, the join first gets
  {"event":"history-truncated","data":{"room_id":7,"since":"<id>","first":"<oldest id kept>"}}
  (Socket.IO: ["history-truncated",{…}]), then every message kept.

  OPTIONS:
    --host ADDR         listen address, an IP literal (default 127.0.0.1)
    --port N            listen port (default 8765; 0 picks one and prints it)
    --protocol NAME     envelope (default) or socketio
    --token-file FILE   require the token: "Authorization: Bearer <token>" (401 otherwise);
                        in socketio mode the header or the connect's auth.token, else the
                        namespace connect is refused with {"message":"unauthorized"}
    --chatter SECONDS   a bot posts a line to every non-empty room at this interval
    --history N         messages kept per room for joins with "since" (default 1000); 0 keeps
                        none and gives messages no ids
    --flood N           send N messages to each client right after it connects (socketio:
                        after its first namespace connect, numbered by "count"), as fast as
                        the socket takes them (a load source for benchmarks; they have no
                        ids and are not kept)
    --flood-size BYTES  approximate size of each flood message (default 200)
    --flood-room R      the room_id in flood messages (default 1)
    --ping-interval MS  socketio: Engine.IO pingInterval (default 25000)
    --ping-timeout MS   socketio: Engine.IO pingTimeout, after which a client that did not
                        answer a ping is dropped (default 20000)
    --max-payload BYTES socketio: Engine.IO maxPayload, the largest message taken (default
                        1000000)
    -h, --help          show this help

  """

var options = DevServer.Options()
var arguments = CommandLine.arguments.dropFirst().makeIterator()
@MainActor func value(_ name: String) -> String {
  guard let value = arguments.next() else {
    fputs("chatlink-devserver: \(name) needs a value\n", stderr)
    exit(2)
  }
  return value
}
@MainActor func number(_ name: String) -> Double {
  guard let n = Double(value(name)), n >= 0 else {
    fputs("chatlink-devserver: \(name) needs a non-negative number\n", stderr)
    exit(2)
  }
  return n
}
/// Engine.IO's figures: whole, at least 1, and small enough for the timers' arithmetic.
@MainActor func positive(_ name: String) -> Int {
  let n = number(name)
  guard n >= 1, n <= 1_000_000_000, n == n.rounded() else {
    fputs("chatlink-devserver: \(name) needs a whole number from 1 to 1000000000\n", stderr)
    exit(2)
  }
  return Int(n)
}
while let argument = arguments.next() {
  switch argument {
  case "--host": options.host = value(argument)
  case "--port": options.port = Int(number(argument))
  case "--protocol":
    let name = value(argument)
    guard let wire = DevServer.WireProtocol(rawValue: name) else {
      fputs("chatlink-devserver: --protocol is envelope or socketio, not '\(name)'\n", stderr)
      exit(2)
    }
    options.wire = wire
  case "--token-file": options.tokenFile = value(argument)
  case "--chatter": options.chatter = number(argument)
  case "--history":
    let n = number(argument)
    guard n <= 10_000_000, n == n.rounded() else {
      fputs("chatlink-devserver: --history needs a whole number from 0 to 10000000\n", stderr)
      exit(2)
    }
    options.history = Int(n)
  case "--flood": options.flood = Int(number(argument))
  case "--flood-size": options.floodSize = Int(number(argument))
  case "--flood-room": options.floodRoom = value(argument)
  case "--ping-interval": options.pingInterval = positive(argument)
  case "--ping-timeout": options.pingTimeout = positive(argument)
  case "--max-payload": options.maxPayload = positive(argument)
  case "-h", "--help":
    print(usage)
    exit(0)
  default:
    fputs("chatlink-devserver: unknown argument '\(argument)'\n\n\(usage)", stderr)
    exit(2)
  }
}

do {
  let loop = try EventLoop()
  let server = try DevServer(loop: loop, options: options)
  let stop = { loop.exit(code: 0) }
  let term = try loop.onSignal(SIGTERM, handler: stop)
  let int = try loop.onSignal(SIGINT, handler: stop)
  // The endpoint's URL: the first line, which tests and scripts read the port from.
  let path = options.wire == .socketio ? EngineIORequest.path : "/"
  print("chatlink-devserver listening on ws://\(options.host):\(server.port)\(path)")
  fflush(stdout)
  _ = (term, int)
  exit(try loop.run())
} catch {
  fputs("chatlink-devserver: \(error)\n", stderr)
  exit(1)
}
