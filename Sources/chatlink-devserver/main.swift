// chatlink-devserver: the bundled local chat backend (envelope protocol) for demos, tests and
// benchmarks, on the WebSocket module's server role.
import ChatLinkCore
import EventLoop
@preconcurrency import Glibc

let usage = """
  USAGE: chatlink-devserver [--host 127.0.0.1] [--port 8765] [--token-file FILE]
                            [--chatter SECONDS] [--flood N [--flood-size BYTES] [--flood-room R]]

  A small chat backend speaking the envelope protocol: clients join rooms
  ({"event":"join-room","data":{"room_id":7}}), send messages ("send-message"), and every
  member of the room, the sender included, receives {"event":"message","data":{…}} with the
  sender's client_id. Pings are answered.

  OPTIONS:
    --host ADDR         listen address, an IP literal (default 127.0.0.1)
    --port N            listen port (default 8765; 0 picks one and prints it)
    --token-file FILE   require "Authorization: Bearer <token>" (401 otherwise)
    --chatter SECONDS   a bot posts a line to every non-empty room at this interval
    --flood N           send N messages to each client right after it connects, as fast as
                        the socket takes them (a load source for benchmarks)
    --flood-size BYTES  approximate size of each flood message (default 200)
    --flood-room R      the room_id in flood messages (default 1)
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
while let argument = arguments.next() {
  switch argument {
  case "--host": options.host = value(argument)
  case "--port": options.port = Int(number(argument))
  case "--token-file": options.tokenFile = value(argument)
  case "--chatter": options.chatter = number(argument)
  case "--flood": options.flood = Int(number(argument))
  case "--flood-size": options.floodSize = Int(number(argument))
  case "--flood-room": options.floodRoom = value(argument)
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
  print("chatlink-devserver listening on ws://\(options.host):\(server.port)/")
  fflush(stdout)
  _ = (term, int)
  exit(try loop.run())
} catch {
  fputs("chatlink-devserver: \(error)\n", stderr)
  exit(1)
}
