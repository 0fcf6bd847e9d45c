import WebSocket

/// Deliveries in two steps (MQTT QoS 2), both ways: inbound, the receipts that make a
/// redelivery an answer without a record, and the journal entries that keep them; outbound,
/// the release a received send waits for, durable in the outbox before it goes out.
extension LinkCore {
  /// A two-step delivery arrived: if it is the redelivery of one already stored, its answer
  /// goes out once that record is durable (in its place among the acknowledgements), and
  /// nothing is stored. Returns whether it was one.
  mutating func answeredRedelivery(
    _ delivery: TwoStepDelivery, _ acknowledgement: Message, _ actions: inout [LinkAction]
  ) -> Bool {
    guard tracksReceipts else { return false }
    var journal: [ReceiptJournalEntry] = []
    let verdict = receipts.received(delivery, journal: &journal)
    appendJournal(journal, &actions)
    guard case .redelivery(let seq) = verdict else { return false }
    if acknowledgements.isEmpty && seq <= receipts.durableThrough {
      actions.append(.send(acknowledgement))
      return true
    }
    if acknowledgements.isEmpty { actions.append(.awaitDurability(true)) }
    acknowledgements.hold(acknowledgement, afterDurable: seq)
    return true
  }

  /// Records through `seq` are durable: now and then the pending deliveries up to it go to
  /// the journal, so that a start reads few records.
  mutating func receiptsDurable(through seq: UInt64, _ actions: inout [LinkAction]) {
    var journal: [ReceiptJournalEntry] = []
    receipts.durable(through: seq, journal: &journal)
    appendJournal(journal, &actions)
  }

  /// A frame's releases (each answered once durable), the backend forgetting its
  /// deliveries, and sends the backend received (each released once that is durable in the
  /// outbox).
  mutating func settleTwoSteps(_ reading: ProtocolReading, _ actions: inout [LinkAction]) {
    let releases = reading.releases
    if !releases.isEmpty || reading.deliveriesForgotten {
      var journal: [ReceiptJournalEntry] = []
      var answers: [Message] = []
      if reading.deliveriesForgotten { receipts.forgotten(journal: &journal) }
      for release in releases {
        if let now = receipts.released(release.id, answer: release.answer, journal: &journal) {
          answers.append(now)
        }
      }
      appendJournal(journal, &actions)
      for answer in answers { actions.append(.send(answer)) }
    }
    for count in reading.awaitingRelease {
      if let entry = ledger.unconfirmed(count: count) { actions.append(.release(entry)) }
    }
  }

  /// The journal is durable through `entry`: the answers and joins that waited for it go out.
  mutating func journalDurable(through entry: UInt64, _ actions: inout [LinkAction]) {
    // What waited belongs to the current connection: an ended one's were voided.
    for frame in receipts.journalDurable(through: entry) where lifecycle.hasConnection {
      actions.append(.send(frame))
    }
  }

  /// A join goes out once every journal entry made so far is durable: after the backend
  /// forgot its deliveries, nothing of the new session may arrive before that is.
  mutating func sendJoin(_ frame: Message, _ actions: inout [LinkAction]) {
    if let now = receipts.hold(frame) { actions.append(.send(now)) }
  }

  /// These entries' releases are durable in the outbox: each still unconfirmed on this
  /// connection is released now (after a reconnect the outbox sends the releases itself).
  mutating func released(_ entries: [OutboxEntry], _ actions: inout [LinkAction]) {
    guard phase == .ready else { return }
    for var entry in entries where ledger.unconfirmed(count: entry.count) != nil {
      entry.released = true
      actions.append(.send(backend.encode(entry)))
    }
  }

  private mutating func appendJournal(
    _ journal: [ReceiptJournalEntry], _ actions: inout [LinkAction]
  ) {
    for entry in journal { actions.append(.journal(entry)) }
  }
}
