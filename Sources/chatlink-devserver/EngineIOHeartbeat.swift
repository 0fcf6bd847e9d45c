import EventLoop

/// When to ping a Socket.IO client and when to give up on it, as Engine.IO 4 servers do:
/// a ping `pingInterval` after the session opens, an answer due within `pingTimeout`, the
/// next ping `pingInterval` after that answer.
///
/// One timer drives it: each firing either pings or, with a ping unanswered, ends the
/// session.
struct EngineIOHeartbeat {
  /// What a timer firing means.
  enum Step: Equatable {
    /// Send a ping; fire again after the delay (the answer's deadline).
    case ping(deadline: Microseconds)
    /// The ping went unanswered: drop the client.
    case timedOut
  }

  let interval: Microseconds
  let timeout: Microseconds
  private(set) var awaitingPong = false

  init(intervalMS: Int, timeoutMS: Int) {
    interval = Microseconds(intervalMS) * 1000
    timeout = Microseconds(timeoutMS) * 1000
  }

  /// The delay to the first ping.
  var first: Microseconds { interval }

  /// The timer fired.
  mutating func fired() -> Step {
    if awaitingPong { return .timedOut }
    awaitingPong = true
    return .ping(deadline: timeout)
  }

  /// The client answered: the delay to the next ping, or nil when no ping was out (a stray
  /// pong changes nothing).
  mutating func pong() -> Microseconds? {
    guard awaitingPong else { return nil }
    awaitingPong = false
    return interval
  }
}
