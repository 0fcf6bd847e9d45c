import LinkCore

/// Everything the daemon exposes as metrics, read at one moment: the input of `families`.
///
/// Pure: the daemon fills it from its link, store and outbox (Daemon+Metrics.swift); tests
/// fill it by hand. Every counter here only grows while the daemon runs: the link and its
/// counters live across reconnects and reloads.
public struct DaemonMetrics: Sendable {
  /// The connection's state name (`ConnectionState.name`).
  public var state: String
  public var counters: LinkCounters
  public var bytesReceived = 0
  public var bytesSent = 0
  public var messagesReceived = 0
  public var messagesSent = 0
  /// Inbound messages dropped because the store already had their ids.
  public var duplicatesDropped = 0
  /// Rooms catching up from the backend's history now.
  public var roomsCatchingUp = 0
  /// Sends accepted into the outbox.
  public var queued = 0
  /// Entries in the outbox now.
  public var outboxDepth = 0
  /// Seconds since the oldest outbox entry was queued; 0 when the outbox is empty.
  public var outboxOldestAge: Double = 0
  public var store = StoreStatistics()
  /// The last time a session became usable, in seconds since the epoch; nil before the first.
  public var lastConnected: Double?
  public var version: String

  /// The state names, in the order their gauges appear.
  public static let states = [
    "idle", "connecting", "tls", "upgrading", "open", "closing", "waiting",
  ]

  /// A snapshot with `state`, `counters` and `version`; the rest starts at zero.
  public init(state: String, counters: LinkCounters, version: String) {
    self.state = state
    self.counters = counters
    self.version = version
  }

  /// The families, in a fixed order: connection, traffic, sends, store, build.
  public var families: [MetricFamily] {
    connectionFamilies + trafficFamilies + sendFamilies + storeFamilies + [
      .info("chatlink_build", help: "The build of chatlinkd.", [MetricLabel("version", version)])
    ]
  }

  private var connectionFamilies: [MetricFamily] {
    [
      MetricFamily(
        name: "chatlink_connection_state", kind: .gauge,
        help: "The backend connection's state: 1 for the current one, 0 for the others.",
        samples: Self.states.map {
          .init(labels: [MetricLabel("state", $0)], value: $0 == state ? 1 : 0)
        }),
      .counter(
        "chatlink_connection_attempts", help: "Connection attempts to the backend.",
        counters.attempts),
      .counter(
        "chatlink_connects",
        help: "Connections whose session became usable (upgrade and protocol set-up done).",
        counters.connects),
      .counter(
        "chatlink_connection_endings",
        help:
          "Connection attempts and connections that ended, by outcome: http_4xx/http_5xx "
          + "(upgrade refused), close_CODE, dns, tls, tls_certificate, connect, timeout, "
          + "handshake, session_refused, closed_early, protocol_violation, cancelled.",
        counters.endings.sorted { $0.key < $1.key }.map {
          ([MetricLabel("outcome", $0.key)], $0.value)
        }
      ),
      MetricFamily(
        name: "chatlink_last_connect_timestamp_seconds", kind: .gauge, unit: "seconds",
        help: "When a session last became usable, in seconds since the epoch (absent before).",
        samples: lastConnected.map { [.init(value: $0)] } ?? []),
      .histogram(
        "chatlink_ping_rtt_seconds", unit: "seconds",
        help:
          "Round trips of answered keepalive probes (WebSocket pings, MQTT PINGREQs) and "
          + "chatlinkctl pings.",
        counters.roundTrips),
    ]
  }

  private var trafficFamilies: [MetricFamily] {
    [
      .counter(
        "chatlink_received_bytes", unit: "bytes",
        help: "Bytes read from the backend connection (after TLS).", bytesReceived),
      .counter(
        "chatlink_sent_bytes", unit: "bytes",
        help: "Bytes written to the backend connection (before TLS).", bytesSent),
      .counter(
        "chatlink_frames_received",
        help: "WebSocket data messages received (fragments reassembled).", messagesReceived),
      .counter(
        "chatlink_frames_sent", help: "WebSocket data messages sent.", messagesSent),
      .counter(
        "chatlink_messages_stored",
        help: "Inbound messages stored (records with direction in).", counters.received),
      .counter(
        "chatlink_inbound_duplicates",
        help: "Inbound messages whose ids the store already had: dropped, not stored twice.",
        duplicatesDropped),
      .counter(
        "chatlink_history_gaps",
        help: "Times the backend's history no longer reached back to the newest stored id.",
        counters.historyGaps),
      .counter(
        "chatlink_history_caught_up",
        help: "Inbound messages a history catch-up brought (XMPP: from the rooms' archives).",
        counters.caughtUp),
      .gauge(
        "chatlink_rooms_catching_up", help: "Rooms catching up from the backend's history now.",
        Double(roomsCatchingUp)),
    ]
  }

  private var sendFamilies: [MetricFamily] {
    [
      .counter(
        "chatlink_sends_queued", help: "Messages accepted into the outbox (durable).", queued),
      .counter(
        "chatlink_sends_sent",
        help: "Outbox messages written to the backend (again after a reconnect).",
        counters.sent),
      .counter(
        "chatlink_sends_confirmed", help: "Outbox messages the backend confirmed.",
        counters.confirmed),
      .counter(
        "chatlink_sends_failed", help: "Outbox messages the backend refused.", counters.failed),
      .gauge(
        "chatlink_outbox_messages", help: "Messages in the outbox, not yet confirmed.",
        Double(outboxDepth)),
      .gauge(
        "chatlink_outbox_oldest_age_seconds", unit: "seconds",
        help: "Age of the oldest message in the outbox; 0 when it is empty.", outboxOldestAge),
    ]
  }

  private var storeFamilies: [MetricFamily] {
    [
      .counter(
        "chatlink_store_written_bytes", unit: "bytes",
        help: "Bytes appended to the message store.", store.bytesWritten),
      .counter(
        "chatlink_store_records", help: "Records appended to the message store.",
        store.recordsWritten),
      .counter(
        "chatlink_store_rotations", help: "Rotations of messages.jsonl.", store.rotations),
      .counter(
        "chatlink_store_write_errors",
        help: "Store writes that failed (the records are kept and written again).",
        store.writeErrors),
      .histogram(
        "chatlink_store_fsync_duration_seconds", unit: "seconds",
        help: "Duration of each fsync of messages.jsonl.", store.syncDurations),
    ]
  }
}
