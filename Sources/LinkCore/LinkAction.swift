import WebSocket

/// What the core asks the driver to do, in order.
public enum LinkAction {
  /// Start a connection attempt; report `.progress`, `.upgraded` and `.ended`.
  case connect
  /// Send a message on the open connection.
  case send(Message)
  /// Send outbox entries on the open connection: `frames[i]` carries `entries[i]`. One action
  /// for a run of them, so a stream of sends costs one action, not two per message.
  case sendOutbox(OutboxFrames, entries: ArraySlice<OutboxEntry>)
  /// Send a ping with this payload.
  case sendPing([UInt8])
  /// Start the closing handshake; `.ended` follows.
  case close(CloseCode, reason: String)
  /// Let go of the current connection (closing it with this code); report nothing more of it:
  /// the core has already counted it as ended.
  case drop(CloseCode, reason: String)
  /// Arm a timer (replacing its previous deadline).
  case arm(LinkTimer, after: Duration)
  /// Disarm a timer.
  case disarm(LinkTimer)
  /// Append an inbound record to the store. When `acknowledged`, the core holds an
  /// acknowledgement for it: report the record's seq with `.stored` at once, and the
  /// acknowledgement goes out (as a `.send`) once `.durable` covers that seq.
  case store(InboundMessage, acknowledged: Bool)
  /// Acknowledgements wait for their records to be durable (true), or none wait any more
  /// (false): while some do, the store should sync as soon as the disk is free rather than at
  /// its interval, since a broker sends only a window of unacknowledged messages.
  case awaitDurability(Bool)
  /// The backend confirmed one entry: remove it from the outbox and store its "out" record.
  case confirmed(DeliveryLedger.Sent)
  /// A pong confirmed every pending entry through this count: remove them from the outbox and
  /// store their "out" records (`entries`, oldest first).
  case confirmedThrough(UInt64, entries: ArraySlice<DeliveryLedger.Sent>)
  /// The backend refused one entry (or it cannot be sent to it): remove it from the outbox
  /// and tell whoever waits for it.
  case failed(OutboxEntry, reason: String)
  /// The backend holds this entry until we release it (MQTT QoS 2's PUBREC): mark it
  /// released in the outbox, durably, then report `.released`; from then on it is never sent
  /// again, only its release.
  case release(OutboxEntry)
  /// Append an entry to the inbound receipts' journal (`InboundReceipts`); the entries are
  /// numbered from 1 in the order of these actions, and `.journalDurable` reports how many
  /// are durable.
  case journal(ReceiptJournalEntry)
  /// Report `.outbox` with the pending entries.
  case requestOutbox
  /// Report `.positions` with the newest id stored for each of these rooms, at once: the
  /// dialect joins them after those ids (the backend replays what came after).
  case requestPositions([RoomID])
  /// Stop reading from the socket (the store is behind).
  case pauseReading
  /// Read again.
  case resumeReading
  /// The state changed, with the reason.
  case stateChanged(ConnectionState, reason: String)
  /// An operator ping came back.
  case pingAnswered(id: UInt64, rtt: Duration)
  /// An operator ping failed.
  case pingFailed(id: UInt64, PingError)
  /// Something for the log.
  case report(LinkReport)
  /// The stop is complete.
  case stopped
}

/// The timers the core arms; the driver keeps one per case.
public enum LinkTimer: Int, Sendable, Hashable, CaseIterable {
  /// The wait before the next connection attempt.
  case retry
  /// The next keepalive probe.
  case keepalive
  /// The deadline for an answer to the outstanding probe.
  case pongDeadline
  /// The next try to send the outbox, once the socket drained.
  case sendRetry
}
