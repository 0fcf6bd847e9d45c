import EventLoop

/// The journal of QoS 2 deliveries not yet released ([MQTT] QoS=2): opened (and rebuilt)
/// with the store, before anything connects.
extension Daemon {
  /// The journal with `[Backend] Protocol=mqtt` and `[MQTT] QoS=2`. At a lower QoS the
  /// broker's releases are answered without being written, so a journal a QoS 2 run left
  /// would go stale: it is removed.
  static func openReceipts(
    _ c: Configuration, loop: EventLoop, disk: BackgroundWorker, store: MessageStore,
    logger: Logger
  ) throws(SystemError) -> ReceiptJournal? {
    guard c.chatProtocol == .mqtt else { return nil }
    guard c.mqttQoS == 2 else {
      if try ReceiptJournal.remove(in: c.storeDirectory) {
        logger.notice(
          "removed the QoS 2 receipts journal: QoS is no longer 2",
          ["file": ReceiptJournal.fileName])
      }
      return nil
    }
    return try ReceiptJournal(
      loop: loop, disk: disk, directory: c.storeDirectory, storeFiles: store.filePaths,
      storeLastSeq: store.lastSeq)
  }

  /// What the journal's rebuild found, for the log.
  func logReceiptsRecovery() {
    guard let receipts else { return }
    if receipts.tornBytes > 0 {
      logger.warning(
        "receipts journal recovery cut a torn last line", ["bytes": String(receipts.tornBytes)])
    }
    if receipts.corruptLines > 0 {
      logger.warning(
        "receipts journal recovery skipped corrupt lines",
        ["lines": String(receipts.corruptLines)])
    }
    logger.info(
      "QoS 2 deliveries pending release",
      [
        "pending": String(receipts.restored.pending.count),
        "records_read": String(receipts.recordsRead),
      ])
    receipts.onFailure = { [unowned self] error in
      self.logger.error(
        "receipts journal write failed; retrying", ["error": error.message])
    }
  }

  /// Calls `completion` once the journal has written everything (at once without one).
  func whenReceiptsIdle(_ completion: @escaping () -> Void) {
    guard let receipts else { return completion() }
    receipts.whenIdle(completion)
  }
}
