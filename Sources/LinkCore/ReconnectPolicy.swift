import JSON
import WebSocket

/// How long to wait after a connection ended, whether that counts as a failure, and what the
/// operator is told: one row per kind of outcome.
///
/// A refusal that will not fix itself (bad credentials, a redirect, a policy close) waits the
/// longest delay and does not grow the backoff, so the daemon never retries in a hot loop and
/// reconnects promptly once the operator fixed the cause and reloaded. A server that says it
/// is restarting is reconnected to soon, without counting a failure.
public enum ReconnectPolicy {
  /// The longest Retry-After honoured.
  public static let retryAfterLimit: Duration = .seconds(3600)
  /// The least wait after close 1013 (try again later), unless ReconnectMaxSec= is shorter.
  public static let tryAgainLaterFloor: Duration = .seconds(10)

  /// How the delay is chosen.
  public enum Delay: Sendable, Hashable {
    /// The next exponential-backoff delay: a failure is counted.
    case backoff
    /// The next backoff delay, but at least this long: a failure is counted.
    case backoffAtLeast(Duration)
    /// A short jittered delay; no failure is counted.
    case short
    /// The longest delay (ReconnectMaxSec=); no failure is counted.
    case longest
    /// What the server asked for (Retry-After), within [ReconnectMinSec=, one hour].
    case serverAsked(Duration)
  }

  /// One row of the table.
  public struct Rule: Sendable, Hashable {
    /// How the delay is chosen.
    public var delay: Delay
    /// A problem worth showing in status until the next successful connection.
    public var problem: String?
    /// Appended to the outcome's text in the log and the disconnected event.
    public var note: String?

    /// Whether this outcome grows the backoff.
    public var countsAsFailure: Bool {
      switch delay {
      case .backoff, .backoffAtLeast: true
      case .short, .longest, .serverAsked: false
      }
    }
  }

  /// What was decided after one outcome.
  public struct Decision: Sendable, Hashable {
    /// The wait before the next attempt.
    public var delay: Duration
    /// The rule that chose it.
    public var rule: Rule
    /// The outcome's text plus the rule's note, for the log and the disconnected event.
    public var text: String
  }

  /// The rule for `outcome`.
  public static func rule(for outcome: ConnectionOutcome) -> Rule {
    switch outcome {
    case .upgradeRefused(let head, let receivedAt):
      return httpRule(head, receivedAt: receivedAt)
    case .handshakeFailed(let error):
      return Rule(delay: .backoff, problem: "handshake failed: \(error)")
    case .certificateRejected, .resolutionFailed, .tlsFailed, .connectionFailed, .timedOut,
      .protocolViolation, .closedEarly, .sessionEnded:
      return Rule(delay: .backoff, problem: outcome.description)
    case .closed(let info):
      return closeRule(info)
    case .sessionRefused(let reason):
      return Rule(delay: .longest, problem: "the backend refused the session: \(reason)")
    case .cancelled, .redirected:
      return Rule(delay: .short)
    }
  }

  /// Applies the rule for `outcome` to `backoff`: the delay, counting a failure if the rule
  /// says so.
  public static func decide(_ outcome: ConnectionOutcome, backoff: inout Backoff) -> Decision {
    let rule = rule(for: outcome)
    let delay: Duration
    switch rule.delay {
    case .backoff: delay = backoff.nextDelay()
    case .backoffAtLeast(let floor): delay = max(backoff.nextDelay(), min(floor, backoff.maximum))
    case .short: delay = backoff.shortDelay()
    case .longest: delay = backoff.maximum
    case .serverAsked(let asked): delay = min(max(asked, backoff.minimum), retryAfterLimit)
    }
    let text = outcome.description + (rule.note.map { "; " + $0 } ?? "")
    return Decision(delay: delay, rule: rule, text: text)
  }

  private static func httpRule(_ head: HTTPResponseHead, receivedAt: Timestamp) -> Rule {
    switch head.status {
    case 401, 403:
      // A bad token will not fix itself quickly: retry slowly, never in a hot loop.
      return Rule(
        delay: .longest,
        problem: "the backend refused the credentials (HTTP \(head.status)); check TokenFile=")
    case 429, 503:
      let problem = "the backend is unavailable (HTTP \(head.status))"
      if let asked = head.retryAfter, let delay = RetryAfterDelay.delay(asked, now: receivedAt) {
        return Rule(delay: .serverAsked(delay), problem: problem, note: "honouring Retry-After")
      }
      return Rule(delay: .backoff, problem: problem)
    case 300...399:
      return Rule(
        delay: .longest,
        problem:
          "the backend redirects to \(head.location ?? "?"); redirects are not followed, update URL="
      )
    default:
      return Rule(delay: .backoff, problem: "the backend refused the upgrade (HTTP \(head.status))")
    }
  }

  private static func closeRule(_ info: CloseInfo) -> Rule {
    switch info.code {
    case .serviceRestart, .goingAway:
      // The server is restarting: come back soon, without counting a failure.
      return Rule(delay: .short)
    case .tryAgainLater:
      return Rule(delay: .backoffAtLeast(tryAgainLaterFloor))
    case .policyViolation:
      return Rule(
        delay: .longest,
        problem: "the backend closed with 1008 (policy violation): \(info.reason)")
    default:
      if case .peer = info.initiator, info.code == .normalClosure { return Rule(delay: .short) }
      return Rule(delay: .backoff)
    }
  }
}
