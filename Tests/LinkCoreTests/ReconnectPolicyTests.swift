import LinkCore
import TestSupport
import WebSocket
import XCTest

/// Every row of the reconnect policy: the delay, whether it counts as a failure, and what the
/// operator is told.
final class ReconnectPolicyTests: XCTestCase {
  private func decide(_ outcome: ConnectionOutcome, failures: Int = 0)
    -> (ReconnectPolicy.Decision, Backoff)
  {
    var backoff = Backoff(minimum: .seconds(1), maximum: .seconds(60), random: SplitMix64())
    for _ in 0..<failures { _ = backoff.nextDelay() }
    let decision = ReconnectPolicy.decide(outcome, backoff: &backoff)
    return (decision, backoff)
  }

  func testRefusedCredentialsWaitTheLongestDelayWithoutGrowingTheBackoff() {
    for status in [401, 403] {
      let (decision, backoff) = decide(refusal(status), failures: 2)
      XCTAssertEqual(decision.delay, .seconds(60))
      XCTAssertFalse(decision.rule.countsAsFailure)
      XCTAssertEqual(backoff.failures, 2)
      XCTAssertEqual(
        decision.rule.problem,
        "the backend refused the credentials (HTTP \(status)); check TokenFile=")
      XCTAssertEqual(decision.text, "server answered \(status) No")
    }
  }

  func testUnavailableHonoursRetryAfterInSeconds() {
    for status in [429, 503] {
      let (decision, backoff) = decide(refusal(status, [("Retry-After", "7")]))
      XCTAssertEqual(decision.rule.delay, .serverAsked(.seconds(7)))
      XCTAssertEqual(decision.delay, .seconds(7))
      XCTAssertFalse(decision.rule.countsAsFailure)
      XCTAssertEqual(backoff.failures, 0)
      XCTAssertEqual(decision.rule.problem, "the backend is unavailable (HTTP \(status))")
      XCTAssertTrue(decision.text.hasSuffix("; honouring Retry-After"), decision.text)
    }
  }

  func testUnavailableHonoursRetryAfterAsAnHTTPDateAgainstTheAnswersTime() {
    // The refusal arrived at 12:00:00; the server asks for 12:02:00.
    let (decision, _) = decide(refusal(503, [("Retry-After", "Wed, 02 Dec 2026 12:02:00 GMT")]))
    XCTAssertEqual(decision.delay, .seconds(120))
  }

  func testRetryAfterIsBoundedByTheMinimumDelayAndOneHour() {
    XCTAssertEqual(decide(refusal(503, [("Retry-After", "0")])).0.delay, .seconds(1))
    XCTAssertEqual(decide(refusal(503, [("Retry-After", "86400")])).0.delay, .seconds(3600))
  }

  func testUnavailableWithoutAReadableRetryAfterBacksOff() {
    for headers in [[], [("Retry-After", "soon")]] {
      let (decision, backoff) = decide(refusal(503, headers))
      XCTAssertEqual(decision.rule.delay, .backoff)
      XCTAssertEqual(backoff.failures, 1)
      XCTAssertFalse(decision.text.contains("honouring"))
    }
  }

  func testARedirectIsNotFollowedAndWaitsTheLongestDelay() {
    let (decision, _) = decide(refusal(302, [("Location", "wss://elsewhere/")]))
    XCTAssertEqual(decision.delay, .seconds(60))
    XCTAssertEqual(
      decision.rule.problem,
      "the backend redirects to wss://elsewhere/; redirects are not followed, update URL=")
  }

  func testOtherRefusalsBackOffAndSayTheStatus() {
    let (decision, backoff) = decide(refusal(500))
    XCTAssertEqual(decision.rule.delay, .backoff)
    XCTAssertEqual(backoff.failures, 1)
    XCTAssertEqual(decision.rule.problem, "the backend refused the upgrade (HTTP 500)")
  }

  func testABrokenHandshakeBacksOff() {
    let (decision, _) = decide(.handshakeFailed(.invalidAccept(expected: "a", found: "b")))
    XCTAssertEqual(decision.rule.delay, .backoff)
    XCTAssertTrue(decision.rule.problem?.hasPrefix("handshake failed: ") == true)
  }

  func testTransportFailuresBackOffAndKeepTheirText() {
    let cases: [(ConnectionOutcome, String)] = [
      (
        .resolutionFailed("cannot resolve chat.example: Name or service not known"),
        "cannot resolve chat.example: Name or service not known"
      ),
      (.certificateRejected("hostname mismatch"), "TLS certificate rejected: hostname mismatch"),
      (.tlsFailed("TLS handshake failed: alert 40"), "TLS handshake failed: alert 40"),
      (
        .connectionFailed("cannot connect to a port 1: refused"),
        "cannot connect to a port 1: refused"
      ),
      (
        .timedOut(phase: "TLS handshake", after: .seconds(10)),
        "timed out after 10 s while TLS handshake"
      ),
      (
        .timedOut(phase: "waiting for a pong", after: .milliseconds(2500)),
        "timed out after 2.5 s while waiting for a pong"
      ),
    ]
    for (outcome, text) in cases {
      let (decision, backoff) = decide(outcome, failures: 1)
      XCTAssertEqual(decision.rule.delay, .backoff, text)
      XCTAssertEqual(backoff.failures, 2, text)
      XCTAssertEqual(decision.rule.problem, text)
      XCTAssertEqual(decision.text, text)
      XCTAssertLessThanOrEqual(decision.delay, .seconds(4))
    }
  }

  func testAServerRestartReconnectsSoonWithoutCountingAFailure() {
    for code in [CloseCode.serviceRestart, .goingAway] {
      let (decision, backoff) = decide(closed(code), failures: 3)
      XCTAssertEqual(decision.rule.delay, .short)
      XCTAssertEqual(backoff.failures, 3)
      XCTAssertNil(decision.rule.problem)
      XCTAssertTrue((Duration.seconds(1)...Duration.seconds(2)).contains(decision.delay))
    }
  }

  func testTryAgainLaterWaitsAtLeastTenSecondsAndCounts() {
    let (decision, backoff) = decide(closed(.tryAgainLater))
    XCTAssertEqual(decision.delay, .seconds(10))
    XCTAssertEqual(backoff.failures, 1)
    // Unless ReconnectMaxSec= is shorter.
    var short = Backoff(minimum: .seconds(1), maximum: .seconds(3), random: SplitMix64())
    XCTAssertLessThanOrEqual(
      ReconnectPolicy.decide(closed(.tryAgainLater), backoff: &short).delay, .seconds(3))
  }

  func testAPolicyCloseWaitsTheLongestDelayAndSaysWhy() {
    let (decision, backoff) = decide(closed(.policyViolation, "token expired"))
    XCTAssertEqual(decision.delay, .seconds(60))
    XCTAssertEqual(backoff.failures, 0)
    XCTAssertEqual(
      decision.rule.problem, "the backend closed with 1008 (policy violation): token expired")
    XCTAssertEqual(
      decision.text,
      "\(CloseInfo(code: .policyViolation, reason: "token expired", initiator: .peer, clean: true))"
    )
  }

  func testAnInternalErrorCloseBacksOff() {
    let (decision, backoff) = decide(closed(.internalServerError))
    XCTAssertEqual(decision.rule.delay, .backoff)
    XCTAssertEqual(backoff.failures, 1)
    XCTAssertNil(decision.rule.problem)
  }

  func testANormalCloseByThePeerReconnectsSoonButOursOrALostConnectionBacksOff() {
    XCTAssertEqual(decide(closed(.normalClosure)).0.rule.delay, .short)
    XCTAssertEqual(decide(closed(.normalClosure, by: .local)).0.rule.delay, .backoff)
    XCTAssertEqual(decide(closed(.abnormalClosure, by: .transport)).0.rule.delay, .backoff)
  }

  func testARefusedSessionIsTreatedLikeRefusedCredentials() {
    let (decision, backoff) = decide(.sessionRefused("unauthorized"))
    XCTAssertEqual(decision.delay, .seconds(60))
    XCTAssertEqual(backoff.failures, 0)
    XCTAssertEqual(decision.rule.problem, "the backend refused the session: unauthorized")
  }

  func testACancelledAttemptIsRetriedSoonWithoutAProblem() {
    let (decision, _) = decide(.cancelled)
    XCTAssertEqual(decision.rule.delay, .short)
    XCTAssertNil(decision.rule.problem)
  }

  func testBackoffGrowsAcrossConsecutiveFailuresUpToTheMaximum() {
    var backoff = Backoff(minimum: .seconds(1), maximum: .seconds(8), random: SplitMix64())
    var delays: [Duration] = []
    for _ in 0..<6 {
      delays.append(
        ReconnectPolicy.decide(.connectionFailed("refused"), backoff: &backoff).delay)
    }
    XCTAssertEqual(backoff.failures, 6)
    XCTAssertTrue(delays.allSatisfy { $0 >= .seconds(1) && $0 <= .seconds(8) })
    XCTAssertGreaterThan(delays.max()!, .seconds(2))
  }
}
