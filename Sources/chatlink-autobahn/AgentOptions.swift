import WebSocket

/// Command-line options of the Autobahn agent.
struct AgentOptions {
  var url = "ws://127.0.0.1:9001"
  var agent = "chatlink"
  var cases: [String]?
  var deflate = true
  var showHelp = false

  static let usage = """
    USAGE: chatlink-autobahn [--url URL] [--agent NAME] [--cases IDS] [--no-deflate]

    Runs the Autobahn|Testsuite fuzzing-server cases against ChatLink's WebSocket engine:
    reads /getCaseCount, runs each case echoing every text and binary message back, then
    calls /updateReports.

    OPTIONS:
      --url URL       fuzzing server (default ws://127.0.0.1:9001)
      --agent NAME    agent name in the reports (default chatlink)
      --cases IDS     comma-separated case ids to run, '*' wildcards allowed
                      (e.g. 1.*,12.1.1); default: every case
      --no-deflate    do not offer permessage-deflate
      -h, --help      show this help

    """

  struct ParseError: Error, CustomStringConvertible {
    var description: String
  }

  static func parse(_ arguments: [String]) throws(ParseError) -> AgentOptions {
    var options = AgentOptions()
    var iterator = arguments.makeIterator()
    while let argument = iterator.next() {
      func value() throws(ParseError) -> String {
        guard let value = iterator.next() else {
          throw ParseError(description: "\(argument) needs a value")
        }
        return value
      }
      switch argument {
      case "--url": options.url = try value()
      case "--agent": options.agent = try value()
      case "--cases":
        options.cases = try value().split(separator: ",").map {
          String($0).trimmingSpaces
        }.filter { !$0.isEmpty }
      case "--no-deflate": options.deflate = false
      case "-h", "--help": options.showHelp = true
      default: throw ParseError(description: "unknown argument '\(argument)'")
      }
    }
    do {
      _ = try WebSocketURL(parsing: options.url)
    } catch {
      throw ParseError(description: "--url: \(error)")
    }
    return options
  }
}

extension String {
  var trimmingSpaces: String {
    var s = Substring(self)
    while s.first == " " { s.removeFirst() }
    while s.last == " " { s.removeLast() }
    return String(s)
  }

  /// Matches a case id against a pattern where '*' matches any run of characters.
  func matches(pattern: String) -> Bool {
    let text = Array(self)
    let pat = Array(pattern)
    var memo = [[Bool?]](
      repeating: [Bool?](repeating: nil, count: pat.count + 1), count: text.count + 1)
    func match(_ i: Int, _ j: Int) -> Bool {
      if let known = memo[i][j] { return known }
      let result: Bool
      if j == pat.count {
        result = i == text.count
      } else if pat[j] == "*" {
        result = match(i, j + 1) || (i < text.count && match(i + 1, j))
      } else {
        result = i < text.count && text[i] == pat[j] && match(i + 1, j + 1)
      }
      memo[i][j] = result
      return result
    }
    return match(0, 0)
  }
}
