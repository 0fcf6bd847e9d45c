import ChatLinkAPI
import JSON
import LinkCore
import Varlink
import WebSocket

/// The Subscribe event feed, and the further replies of a Send called with "more".
///
/// The daemon calls these as things happen. Most of the time nobody follows: every one of them
/// returns before building anything unless a client is listening.
extension ControlService {
  /// A stored inbound message, for subscribers.
  ///
  /// - Parameter namedEvents: the protocol names its events (Socket.IO): the event carries the
  ///   record's `event` member as `name`.
  public func publishMessage(
    _ record: StoreRecord, scan: PayloadScan, room: RoomID?, namedEvents: Bool = false
  ) {
    guard hasSubscribers else { return }
    var line: [UInt8] = []
    record.appendLine(to: &line, scan: scan)
    line.removeLast()
    // The store writes every line so that it parses; one that did not would be dropped here.
    guard let value = try? JSONValue.parse(line), let stored = try? StoredRecord(json: value)
    else { return }
    let name = namedEvents ? stored.data["event"]?.stringValue : nil
    publish(.message(time: Self.now, record: stored, room: room?.name, name: name), room: room)
  }

  /// Entries written to the backend, in order.
  public func publishSent(_ entries: some Collection<OutboxEntry>) {
    publishProgress(entries, .sent) { .sent(time: Self.now, id: $0.id, room: $0.room?.name) }
  }

  /// Entries the backend confirmed: a burst of them may come at once.
  public func publishConfirmed(_ entries: some Collection<OutboxEntry>) {
    publishProgress(entries, .confirmed) {
      .confirmed(time: Self.now, id: $0.id, room: $0.room?.name)
    }
  }

  /// Tells watched sends their new state and subscribers the event of each entry; nothing is
  /// built, and the entries are not even walked, when nobody listens.
  private func publishProgress(
    _ entries: some Collection<OutboxEntry>, _ state: SendState,
    event: (OutboxEntry) -> DaemonEvent
  ) {
    let watched = server.watchedSendCount > 0
    let subscribed = hasSubscribers
    guard watched || subscribed else { return }
    for entry in entries {
      if watched { notifySend(entry, state: state) }
      if subscribed { publish(event(entry), room: entry.room) }
    }
  }

  /// An entry the backend refused: the last reply of a watched send is the error.
  public func publishFailed(_ entry: OutboxEntry, reason: String) {
    if server.watchedSendCount > 0 {
      let error = DaemonError.deliveryFailed(id: entry.id, reason: reason).varlinkError
      for connection in server.all where connection.watchedSends[entry.id] != nil {
        connection.pushReceipt(VarlinkReply(error), id: entry.id)
      }
    }
    guard hasSubscribers else { return }
    publish(
      .failed(time: Self.now, id: entry.id, room: entry.room?.name, reason: reason),
      room: entry.room)
  }

  /// A connection opened.
  public func publishConnected(_ result: ClientHandshake.Result?) {
    guard hasSubscribers else { return }
    publish(
      .connected(
        time: Self.now, subprotocol: result?.subprotocol,
        extensions: result?.deflate.map(\.description)),
      room: nil)
  }

  /// A connection ended.
  public func publishDisconnected(reason: String, code: Int?) {
    guard hasSubscribers else { return }
    publish(.disconnected(time: Self.now, reason: reason, code: code), room: nil)
  }

  /// A problem (store failure, connection error).
  public func publishError(_ text: String) {
    guard hasSubscribers else { return }
    publish(.error(time: Self.now, text: text), room: nil)
  }

  /// The status line changed.
  public func publishStatus(_ text: String) {
    guard hasSubscribers else { return }
    publish(.status(time: Self.now, text: text), room: nil)
  }

  private func publish(_ event: DaemonEvent, room: RoomID?) {
    let reply = VarlinkReply(parameters: SubscribeReply(event: event).json, continues: true)
    for connection in server.all {
      guard let subscription = connection.subscription, subscription.passes(room) else { continue }
      connection.push(reply)
    }
  }

  /// The next reply of each Send with "more" that waits for `entry`; confirmed is the last.
  private func notifySend(_ entry: OutboxEntry, state: SendState) {
    for connection in server.all where connection.watchedSends[entry.id] != nil {
      let receipt = SendReceipt(id: entry.id, state: state, count: Int(clamping: entry.count))
      connection.pushReceipt(
        VarlinkReply(parameters: receipt.json, continues: state != .confirmed), id: entry.id)
    }
  }
}
