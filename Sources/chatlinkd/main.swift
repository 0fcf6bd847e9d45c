// chatlinkd: parse the command line, set up, notify READY, run the loop.
import ChatLinkAPI
import ChatLinkDaemon
import EventLoop
@preconcurrency import Glibc

let usage = """
  USAGE: chatlinkd [--instance NAME] [--config PATH] [--check-config] [--version]

  Keeps one WebSocket connection to a chat backend, stores every received message as a JSON
  line, and delivers messages sent with chatlinkctl. Normally started by systemd
  (chatlinkd.service); see chatlinkd(8) and chatlinkd.conf(5).

  OPTIONS:
    --instance NAME   run instance NAME, as chatlinkd@NAME.service does: the configuration
                      \(Instance.configDirectory)/NAME.conf, the store \(Instance.stateDirectory)/NAME/, the
                      control socket \(Instance.runtimeDirectory)/NAME.sock (the file may set others)
    --config PATH     configuration file (default \(ConfigLoader.defaultPath), or NAME.conf
                      with --instance); drop-ins are read from PATH.d/*.conf
    --check-config    validate the configuration and the token file, then exit
    --version         print the version
    -h, --help        show this help

  """

func fail(_ message: String, code: Int32) -> Never {
  fputs("chatlinkd: \(message)\n", stderr)
  exit(code)
}

#if DEBUG
  // make sanitize's proof that the sanitizer builds report a known bug (Tests/sanitize).
  if let name = SanitizerProof.requested() {
    guard let proof = SanitizerProof(rawValue: name) else {
      fail("no sanitizer proof named '\(name)'", code: 2)
    }
    print(proof.run())
    exit(0)
  }
#endif

Memory.configureAllocator()
var configPath: String?
var instance: Instance?
var checkOnly = false
var arguments = CommandLine.arguments.dropFirst().makeIterator()
while let argument = arguments.next() {
  switch argument {
  case "--config":
    guard let path = arguments.next() else { fail("--config needs a path\n\n\(usage)", code: 2) }
    configPath = path
  case "--instance":
    guard let name = arguments.next() else { fail("--instance needs a name\n\n\(usage)", code: 2) }
    do {
      instance = try Instance(name)
    } catch {
      fail("\(error)", code: 2)
    }
  case "--check-config": checkOnly = true
  case "--version":
    print("chatlinkd \(ChatLinkVersion.current)")
    exit(0)
  case "-h", "--help":
    print(usage)
    exit(0)
  default:
    fail("unknown argument '\(argument)'\n\n\(usage)", code: 2)
  }
}

let options = Daemon.Options(configPath: configPath, instance: instance)

if checkOnly {
  do {
    let configuration = try Daemon.check(options: options)
    print("\(options.configPath): OK (backend \(configuration.url?.description ?? "?"))")
    exit(0)
  } catch {
    fail("\(error)", code: 1)
  }
}

do {
  let daemon = try Daemon(options: options)
  exit(try daemon.run())
} catch {
  // Through the logger, so journald records it at priority crit with its fields and
  // `journalctl -p err -u chatlinkd` shows why the service did not start.
  var logger = Logger(label: "chatlinkd")
  if let instance { logger.metadata = [("instance", instance.name)] }
  logger.critical("cannot start", ["error": "\(error)"])
  exit(1)
}
