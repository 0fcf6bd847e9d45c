import ChatLinkAPI
import EventLoop
import JSON
import LinkCore
import Varlink

/// The daemon's metrics: read from the link, the store and the outbox at the moment they are
/// asked for (a scrape or GetMetrics), so nothing is kept twice and the hot paths only bump
/// the counters they already had.
extension Daemon {
  /// Labels every sample carries: `instance="NAME"` for chatlinkd@NAME, so that the instances
  /// of a host scraped into one Prometheus stay apart; none for the plain chatlinkd.service.
  var metricLabels: [MetricLabel] {
    configuration.instance.map { [MetricLabel("instance", $0.name)] } ?? []
  }

  /// The metrics now.
  public var metricsSnapshot: DaemonMetrics {
    var metrics = DaemonMetrics(
      state: link.state.name, counters: link.counters, version: ChatLinkVersion.current)
    let traffic = link.traffic
    metrics.bytesReceived = traffic.bytesReceived
    metrics.bytesSent = traffic.bytesSent
    metrics.messagesReceived = traffic.messagesReceived
    metrics.messagesSent = traffic.messagesSent
    metrics.duplicatesDropped = store.duplicatesDropped
    metrics.roomsCatchingUp = link.roomsCatchingUp
    metrics.queued = outbox.queued
    metrics.outboxDepth = outbox.pending.count
    let now = Timestamp.now()
    if let oldest = outbox.pending.first {
      metrics.outboxOldestAge = max(0, now.since(oldest.created).inSeconds)
    }
    metrics.store = store.statistics
    metrics.lastConnected = link.lastConnected.map(\.secondsSinceEpoch)
    return metrics
  }

  /// Opens [Metrics] Listen=, if set. A busy port or a foreign address stops the start: an
  /// operator who asked for metrics finds out at once, not when a dashboard goes blank.
  func startMetrics() throws(SystemError) {
    guard let address = configuration.metricsListen else { return }
    do {
      metricsServer = try MetricsServer(loop: loop, address: address) { [unowned self] in
        self.metricsText($0)
      }
    } catch {
      throw SystemError("[Metrics] Listen=\(address): \(error.call)", errno: error.errno)
    }
    logger.info("metrics endpoint ready", ["listen": address.description, "path": "/metrics"])
  }

  /// The metrics as text of `format`.
  public func metricsText(_ format: OpenMetricsRenderer.Format) -> String {
    OpenMetricsRenderer(format: format, constantLabels: metricLabels)
      .render(metricsSnapshot.families)
  }
}
