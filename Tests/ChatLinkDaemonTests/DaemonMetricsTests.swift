import ChatLinkDaemon
import LinkCore
import XCTest

/// The daemon's metric set, from a snapshot filled by hand.
final class DaemonMetricsTests: XCTestCase {
  private func text(_ metrics: DaemonMetrics) -> String {
    OpenMetricsRenderer().render(metrics.families)
  }

  private func sample() -> DaemonMetrics {
    var counters = LinkCounters()
    counters.attempts = 4
    counters.connects = 2
    counters.received = 10
    counters.sent = 6
    counters.confirmed = 5
    counters.failed = 1
    counters.caughtUp = 3
    counters.endings = ["timeout": 1, "close_1006": 2]
    counters.roundTrips.observe(0.002)
    var metrics = DaemonMetrics(state: "open", counters: counters, version: "0.1.0")
    metrics.queued = 7
    metrics.outboxDepth = 1
    metrics.roomsCatchingUp = 2
    metrics.outboxOldestAge = 2.5
    metrics.bytesReceived = 900
    metrics.lastConnected = 1_764_849_600
    return metrics
  }

  func testTheStateIsOneGaugePerStateWithOnlyTheCurrentOneAtOne() {
    let text = text(sample())
    for state in DaemonMetrics.states {
      let value = state == "open" ? "1" : "0"
      XCTAssertTrue(
        text.contains("\nchatlink_connection_state{state=\"\(state)\"} \(value)\n"), state)
    }
  }

  func testCountersCarryTheSnapshotsValues() {
    let text = text(sample())
    for line in [
      "chatlink_connection_attempts_total 4", "chatlink_connects_total 2",
      "chatlink_messages_stored_total 10", "chatlink_sends_queued_total 7",
      "chatlink_sends_sent_total 6", "chatlink_sends_confirmed_total 5",
      "chatlink_sends_failed_total 1", "chatlink_outbox_messages 1",
      "chatlink_outbox_oldest_age_seconds 2.5", "chatlink_received_bytes_total 900",
      "chatlink_last_connect_timestamp_seconds 1764849600",
      "chatlink_ping_rtt_seconds_count 1", "chatlink_build_info{version=\"0.1.0\"} 1",
      "chatlink_history_caught_up_total 3", "chatlink_rooms_catching_up 2",
    ] {
      XCTAssertTrue(text.contains("\n" + line + "\n"), line)
    }
  }

  func testEndingsAreLabelledByOutcomeInNameOrder() {
    let text = text(sample())
    let first = try? XCTUnwrap(
      text.range(of: "chatlink_connection_endings_total{outcome=\"close_1006\"} 2"))
    let second = try? XCTUnwrap(
      text.range(of: "chatlink_connection_endings_total{outcome=\"timeout\"} 1"))
    XCTAssertNotNil(first)
    XCTAssertNotNil(second)
    if let first, let second { XCTAssertLessThan(first.lowerBound, second.lowerBound) }
  }

  func testBeforeTheFirstConnectTheTimestampHasNoSampleButItsFamilyIsDescribed() {
    var metrics = sample()
    metrics.lastConnected = nil
    let text = text(metrics)
    XCTAssertTrue(text.contains("# TYPE chatlink_last_connect_timestamp_seconds gauge\n"))
    XCTAssertFalse(text.contains("\nchatlink_last_connect_timestamp_seconds "))
  }

  func testEveryFamilyWithAUnitEndsInItAndTheTextEndsInEOF() {
    for family in sample().families {
      if let unit = family.unit { XCTAssertTrue(family.name.hasSuffix("_" + unit), family.name) }
      XCTAssertFalse(family.name.hasSuffix("_total"), family.name)
    }
    XCTAssertTrue(text(sample()).hasSuffix("\n# EOF\n"))
  }
}
