import EventLoop
@preconcurrency import Glibc
import Transport
import WebSocket
import WebSocketClient

/// Drives the fuzzing server: count, optional id lookup, every case, then the report.
final class AutobahnAgent: WebSocketClientDelegate {
  private enum Step {
    case count
    case caseInfo(Int)
    case runCase(Int)
    case report
  }

  private let loop: EventLoop
  private let options: AgentOptions
  private let base: WebSocketURL
  private let resolver: Resolver
  private var client: WebSocketClient?
  private var step = Step.count
  private var caseCount = 0
  private var selected: [Int] = []
  private var selectedIndex = 0
  private var caseIDs: [Int: String] = [:]
  private var lastText: String?
  private var caseTimer: Timer?
  private var caseStarted: Microseconds = 0
  private var failures = 0

  init(loop: EventLoop, options: AgentOptions) throws {
    self.loop = loop
    self.options = options
    base = try WebSocketURL(parsing: options.url)
    resolver = try Resolver(loop: loop)
    // A case that never ends would hang CI; Autobahn's slowest cases take a few seconds.
    caseTimer = try loop.makeTimer { [unowned self] in
      self.log("case timed out, aborting the connection")
      self.failures += 1
      self.client?.abort(.timedOut(phase: "running the case", seconds: 120))
    }
  }

  func start() {
    open(path: "/getCaseCount")
  }

  private func open(path: String) {
    var url = base
    url.resource = path
    let configuration = WebSocketClient.Configuration(
      url: url, deflate: options.deflate ? PerMessageDeflateOptions() : nil,
      limits: ClientConnection.Limits(maxFrameSize: 64 << 20, maxMessageSize: 64 << 20),
      connectTimeout: 10_000_000, closeTimeout: 5_000_000)
    let client = WebSocketClient(
      loop: loop, resolver: resolver, tlsContext: nil, configuration: configuration)
    client.delegate = self
    self.client = client
    lastText = nil
    caseStarted = loop.now
    caseTimer?.schedule(after: 120_000_000)
    client.connect()
  }

  private func query(_ value: String) -> String {
    var out = ""
    for byte in value.utf8 {
      switch byte {
      case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
        UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"),
        UInt8(ascii: "."):
        out.append(Character(Unicode.Scalar(byte)))
      default:
        let hex = String(byte, radix: 16, uppercase: true)
        out += "%" + (hex.count == 1 ? "0" + hex : hex)
      }
    }
    return out
  }

  // MARK: WebSocketClientDelegate

  func webSocketDidOpen(_ client: WebSocketClient, handshake: ClientHandshake.Result) {}

  func webSocket(_ client: WebSocketClient, didReceive message: consuming Message) {
    if case .runCase = step {
      do {
        try client.send(message)
      } catch {
        log("echo failed: \(error)")
      }
    } else {
      lastText = message.text
    }
  }

  func webSocket(_ client: WebSocketClient, didDisconnect reason: WebSocketClient.Disconnect) {
    caseTimer?.disarm()
    self.client = nil
    // Continue from a fresh loop iteration: the old client is still on the stack.
    loop.post { [unowned self] in self.advance(after: reason) }
  }

  private func advance(after reason: WebSocketClient.Disconnect) {
    switch step {
    case .count:
      guard let text = lastText, let count = Int(text.trimmingSpaces), count > 0 else {
        log("cannot read the case count: \(reason)")
        loop.exit(code: 1)
        return
      }
      caseCount = count
      if let patterns = options.cases {
        step = .caseInfo(1)
        _ = patterns
        open(path: "/getCaseInfo?case=1")
      } else {
        selected = Array(1...count)
        runNext()
      }
    case .caseInfo(let n):
      if let text = lastText, let id = Self.caseID(fromJSON: text) { caseIDs[n] = id }
      if n < caseCount {
        step = .caseInfo(n + 1)
        open(path: "/getCaseInfo?case=\(n + 1)")
      } else {
        let patterns = options.cases ?? ["*"]
        selected = (1...caseCount).filter { n in
          guard let id = caseIDs[n] else { return false }
          return patterns.contains { id.matches(pattern: $0) }
        }
        log("\(selected.count) of \(caseCount) cases match \(patterns.joined(separator: ","))")
        runNext()
      }
    case .runCase(let n):
      let ms = Double(loop.now - caseStarted) / 1000
      let id = caseIDs[n].map { " \($0)" } ?? ""
      print("[\(selectedIndex)/\(selected.count)] case \(n)\(id): \(reason) (\(Int(ms)) ms)")
      fflush(stdout)
      runNext()
    case .report:
      log("reports updated")
      loop.exit(code: failures == 0 ? 0 : 1)
    }
  }

  private func runNext() {
    guard selectedIndex < selected.count else {
      step = .report
      open(path: "/updateReports?agent=\(query(options.agent))")
      return
    }
    let n = selected[selectedIndex]
    selectedIndex += 1
    step = .runCase(n)
    open(path: "/runCase?case=\(n)&agent=\(query(options.agent))")
  }

  /// Pulls `"id": "1.2.3"` out of getCaseInfo's JSON without a JSON library.
  static func caseID(fromJSON text: String) -> String? {
    guard let keyRange = text.firstRange(of: "\"id\"") else { return nil }
    let rest = text[keyRange.upperBound...].drop { $0 == " " || $0 == ":" }
    guard rest.first == "\"" else { return nil }
    let value = rest.dropFirst().prefix { $0 != "\"" }
    return String(value)
  }

  private func log(_ text: String) {
    fputs("chatlink-autobahn: \(text)\n", stderr)
  }
}
