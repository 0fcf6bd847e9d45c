import LinkCore
import XCTest

final class KeepaliveTests: XCTestCase {
  private let t0 = MonotonicInstant.origin

  func testATickSendsAPingUnlessOneIsOutstanding() {
    var keepalive = Keepalive(interval: .seconds(10), timeout: .seconds(5))
    XCTAssertEqual(keepalive.tick(now: t0, covers: 0), 1)
    XCTAssertNil(keepalive.tick(now: t0 + .seconds(10), covers: 0))
    XCTAssertEqual(keepalive.deadline, t0 + .seconds(5))
  }

  func testThePingPayloadCarriesTheCounter() {
    XCTAssertEqual(Keepalive.payload(0x0102), [0, 0, 0, 0, 0, 0, 1, 2])
    XCTAssertEqual(Keepalive.counter(Keepalive.payload(987_654_321)), 987_654_321)
    XCTAssertNil(Keepalive.counter([1, 2, 3]))
  }

  func testAnyFrameMovesTheDeadlineAndSilenceKillsThePeer() {
    var keepalive = Keepalive(interval: .seconds(10), timeout: .seconds(5))
    _ = keepalive.tick(now: t0, covers: 0)
    keepalive.frameArrived(now: t0 + .seconds(3))
    XCTAssertEqual(keepalive.deadline, t0 + .seconds(8))
    XCTAssertEqual(
      keepalive.deadlineExpired(now: t0 + .seconds(5), readingPaused: false), .extend(.seconds(3)))
    XCTAssertEqual(
      keepalive.deadlineExpired(now: t0 + .seconds(8), readingPaused: false),
      .dead(failedPings: []))
    XCTAssertNil(keepalive.outstanding)
  }

  func testAnyFrameOfAPeerThatSendsHeartbeatsMovesItsNextDueTime() {
    var keepalive = Keepalive(interval: .seconds(10), timeout: .seconds(5))
    keepalive.peerHeartbeat(now: t0, within: .seconds(2))
    XCTAssertEqual(keepalive.deadline, t0 + .seconds(2))
    keepalive.frameArrived(now: t0 + .milliseconds(1500))
    XCTAssertEqual(keepalive.deadline, t0 + .milliseconds(3500), "a data frame is a sign of life")
    XCTAssertEqual(
      keepalive.deadlineExpired(now: t0 + .seconds(2), readingPaused: false),
      .extend(.milliseconds(1500)))
    XCTAssertEqual(
      keepalive.deadlineExpired(now: t0 + .milliseconds(3500), readingPaused: false),
      .dead(failedPings: []), "then silence past the promise")
  }

  func testWhileReadingIsPausedSilenceSaysNothingAboutThePeer() {
    var keepalive = Keepalive(interval: .seconds(10), timeout: .seconds(5))
    _ = keepalive.tick(now: t0, covers: 0)
    XCTAssertEqual(
      keepalive.deadlineExpired(now: t0 + .seconds(60), readingPaused: true), .extend(.seconds(5)))
    XCTAssertNotNil(keepalive.outstanding)
  }

  func testAPongConfirmsWhatItsPingCovered() {
    var keepalive = Keepalive(interval: .seconds(10), timeout: .seconds(5))
    let counter = keepalive.tick(now: t0, covers: 42)!
    let answer = keepalive.pong(Keepalive.payload(counter), now: t0 + .milliseconds(20))
    XCTAssertEqual(answer.confirmedThrough, 42)
    XCTAssertNil(keepalive.outstanding)
    XCTAssertEqual(keepalive.deadlineExpired(now: t0 + .seconds(9), readingPaused: false), .idle)
  }

  func testAStaleOrForeignPongConfirmsNothing() {
    var keepalive = Keepalive(interval: .seconds(10), timeout: .seconds(5))
    _ = keepalive.tick(now: t0, covers: 1)
    XCTAssertNil(keepalive.pong([9, 9], now: t0).confirmedThrough)
    XCTAssertNil(keepalive.pong(Keepalive.payload(0), now: t0).confirmedThrough)
    XCTAssertNotNil(keepalive.outstanding)
  }

  func testAConfirmationAskedForWhileAPingIsOutFollowsItsPong() {
    var keepalive = Keepalive(interval: .seconds(10), timeout: .seconds(5))
    let first = keepalive.confirmationPing(now: t0, covers: 1)!
    XCTAssertNil(keepalive.confirmationPing(now: t0, covers: 2))
    let answer = keepalive.pong(Keepalive.payload(first), now: t0)
    XCTAssertEqual(answer.confirmedThrough, 1)
    XCTAssertTrue(keepalive.takeConfirmationWanted(answeredThrough: 1, lastSent: 2))
    XCTAssertFalse(keepalive.takeConfirmationWanted(answeredThrough: 2, lastSent: 2))
  }

  func testAnOperatorPingIsAnsweredByItsOwnPongWithTheRoundTrip() {
    var keepalive = Keepalive(interval: .seconds(10), timeout: .seconds(5))
    let counter = keepalive.operatorPing(id: 7, now: t0, covers: 0)
    let answer = keepalive.pong(Keepalive.payload(counter), now: t0 + .milliseconds(12))
    XCTAssertEqual(answer.answeredPings, [Keepalive.AnsweredPing(id: 7, rtt: .milliseconds(12))])
  }

  func testAnOperatorPingBehindAnotherProbeKeepsItsOwnDeadline() {
    var keepalive = Keepalive(interval: .seconds(10), timeout: .seconds(5))
    let probe = keepalive.tick(now: t0, covers: 0)!
    let mine = keepalive.operatorPing(id: 1, now: t0 + .seconds(1), covers: 0)
    // Frames do not stretch an operator ping's deadline: it fails on time.
    keepalive.frameArrived(now: t0 + .seconds(4))
    XCTAssertEqual(keepalive.deadline, t0 + .seconds(5))
    let answer = keepalive.pong(Keepalive.payload(probe), now: t0 + .seconds(2))
    XCTAssertEqual(answer.answeredPings, [])
    XCTAssertEqual(keepalive.outstanding?.counter, mine)
    XCTAssertEqual(keepalive.deadline, t0 + .seconds(6))
    XCTAssertEqual(
      keepalive.deadlineExpired(now: t0 + .seconds(6), readingPaused: false),
      .dead(failedPings: [1]))
  }

  func testResetFailsTheWaitingOperatorPings() {
    var keepalive = Keepalive(interval: .seconds(10), timeout: .seconds(5))
    _ = keepalive.operatorPing(id: 3, now: t0, covers: 0)
    _ = keepalive.operatorPing(id: 4, now: t0, covers: 0)
    XCTAssertEqual(keepalive.reset(), [3, 4])
    XCTAssertNil(keepalive.outstanding)
  }

  func testADialectHeartbeatIsAnsweredByTheDialectAndConfirmsNothing() {
    var keepalive = Keepalive(interval: .seconds(10), timeout: .seconds(5))
    keepalive.heartbeatSent(now: t0)
    XCTAssertEqual(keepalive.outstanding?.counter, 0)
    XCTAssertEqual(keepalive.deadline, t0 + .seconds(5))
    keepalive.heartbeatAnswered()
    XCTAssertNil(keepalive.outstanding)
    keepalive.heartbeatSent(now: t0 + .seconds(10))
    XCTAssertEqual(
      keepalive.deadlineExpired(now: t0 + .seconds(15), readingPaused: false),
      .dead(failedPings: []))
  }
}
