import JSON
import LinkCore
import WebSocket
import XCTest

/// The counters metrics read from the core: endings by outcome, round trips, and that they
/// only grow across reconnects and reloads.
final class LinkCountersTests: XCTestCase {
  func testEveryEndedAttemptOrConnectionIsCountedByItsKind() {
    var link = Harness()
    link.on(.start)
    link.on(.ended(.resolutionFailed("no such host")))
    link.on(.timerFired(.retry))
    let refused = HTTPResponseHead(status: 503, reason: "Busy", headers: [:])
    link.on(.ended(.upgradeRefused(refused, receivedAt: Timestamp.now())))
    link.on(.timerFired(.retry))
    link.on(.upgraded(handshake()))
    link.advance(.seconds(60))
    link.on(.ended(closed(.goingAway)))
    XCTAssertEqual(link.core.counters.endings, ["dns": 1, "http_5xx": 1, "close_1001": 1])
    XCTAssertEqual(link.core.counters.attempts, 3)
    XCTAssertEqual(link.core.counters.connects, 1)
  }

  func testOutcomeKindsAreShortAndBoundedNames() {
    XCTAssertEqual(ConnectionOutcome.certificateRejected("expired").kind, "tls_certificate")
    XCTAssertEqual(ConnectionOutcome.tlsFailed("alert").kind, "tls")
    XCTAssertEqual(
      ConnectionOutcome.timedOut(phase: "connecting", after: .seconds(5)).kind, "timeout")
    XCTAssertEqual(ConnectionOutcome.connectionFailed("refused").kind, "connect")
    let notFound = HTTPResponseHead(status: 404, reason: "Not Found", headers: [:])
    XCTAssertEqual(ConnectionOutcome.upgradeRefused(notFound, receivedAt: .now()).kind, "http_4xx")
    XCTAssertEqual(closed(.abnormalClosure, by: .transport).kind, "close_1006")
  }

  func testAnAnsweredKeepaliveProbeAddsItsRoundTripToTheHistogram() {
    var link = Harness()
    link.open()
    link.on(.timerFired(.keepalive))
    link.advance(.milliseconds(3))
    link.on(.pongReceived(Keepalive.payload(1)))
    let roundTrips = link.core.counters.roundTrips
    XCTAssertEqual(roundTrips.count, 1)
    XCTAssertEqual(roundTrips.sum, 0.003, accuracy: 1e-9)
    XCTAssertEqual(roundTrips.counts[roundTrips.bounds.firstIndex(of: 0.005)!], 1)
  }

  func testCountersKeepGrowingAcrossAReconnectAndAReload() {
    var link = Harness()
    link.open()
    let before = link.core.counters
    link.on(.reconnect(reason: "asked"))
    link.on(.upgraded(handshake()))
    XCTAssertEqual(link.core.counters.endings["cancelled"], 1)
    XCTAssertEqual(link.core.counters.connects, before.connects + 1)
    XCTAssertEqual(link.core.counters.attempts, before.attempts + 1)
    let afterReconnect = link.core.counters
    link.on(.reload(link.core.settings, rooms: []))
    XCTAssertEqual(link.core.counters.connects, afterReconnect.connects)
    XCTAssertEqual(link.core.counters.attempts, afterReconnect.attempts)
  }
}

final class HistogramTests: XCTestCase {
  func testAnObservationGoesIntoTheFirstBucketWhoseBoundIsNotBelowIt() {
    var histogram = Histogram(bounds: [1, 0.5, 2, 1])
    XCTAssertEqual(histogram.bounds, [0.5, 1, 2], "sorted, duplicates dropped")
    for value in [0.5, 0.75, 1, 3, .infinity] { histogram.observe(value) }
    XCTAssertEqual(histogram.counts, [1, 2, 0, 2])
    XCTAssertEqual(histogram.count, 5)
  }

  func testNaNIsIgnoredAndSpansCountInSeconds() {
    var histogram = Histogram(bounds: [0.01])
    histogram.observe(Double.nan)
    histogram.observe(Duration.milliseconds(250))
    XCTAssertEqual(histogram.count, 1)
    XCTAssertEqual(histogram.sum, 0.25, accuracy: 1e-12)
    XCTAssertEqual(histogram.counts, [0, 1])
  }
}
