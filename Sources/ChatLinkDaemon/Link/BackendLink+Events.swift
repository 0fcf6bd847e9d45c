import EventLoop
import JSON
import LinkCore
import Transport
import WebSocket
import WebSocketClient

// What the WebSocket client, the store and the outbox report, fed to the core; the store and
// log work of the core's actions.
extension BackendLink {
  public func webSocket(_ client: WebSocketClient, didReach progress: WebSocketClient.Progress) {
    guard client === self.client else { return }
    switch progress {
    case .tlsHandshake: feed(.progress(.tlsHandshake))
    case .upgrading: feed(.progress(.upgrading))
    }
  }

  public func webSocketDidOpen(_ client: WebSocketClient, handshake: ClientHandshake.Result) {
    guard client === self.client else { return }
    feed(.upgraded(handshake))
  }

  public func webSocket(_ client: WebSocketClient, didReceive message: consuming Message) {
    guard ObjectIdentifier(client) == clientIdentity else { return }
    // Taken from the client in hand: a load of `self.client` per record would retain and
    // release it, and a client (weakly referenced) keeps its counts in a side table.
    readTime = client.receivedAt
    // The frame moves on into its record, and the record to the store, without a reference
    // count on the way.
    feed(.message(consume message))
    // The record is stored (the store copied the bytes): the next frames' payloads can use
    // its memory, which is taken only if nothing else still holds it by then (e.g. a
    // subscriber's queue).
    if let spent = spentPayload.take() { client.recycle(spent) }
  }

  public func webSocket(_ client: WebSocketClient, didReceivePing payload: [UInt8]) {
    guard client === self.client else { return }
    feed(.pingReceived)
  }

  public func webSocket(_ client: WebSocketClient, didReceivePong payload: [UInt8]) {
    guard client === self.client else { return }
    feed(.pongReceived(payload))
  }

  public func webSocket(_ client: WebSocketClient, didDisconnect reason: WebSocketClient.Disconnect)
  {
    guard client === self.client else { return }
    self.client = nil
    feed(.ended(Self.outcome(reason)))
  }

  /// What the client reported, as the core's outcome.
  static func outcome(_ reason: WebSocketClient.Disconnect) -> ConnectionOutcome {
    switch reason {
    case .handshakeFailed(.unexpectedStatus(let head)):
      return .upgradeRefused(head, receivedAt: .now())
    case .handshakeFailed(let error):
      return .handshakeFailed(error)
    case .transportFailed(let error):
      switch error {
      case .resolutionFailed: return .resolutionFailed(error.description)
      case .certificateRejected(let problem): return .certificateRejected("\(problem)")
      case .tlsHandshakeFailed, .tls, .tlsConfiguration: return .tlsFailed(error.description)
      case .timedOut(let phase, let seconds):
        return .timedOut(phase: phase, after: .seconds(seconds))
      case .connectFailed, .io, .system, .proxyFailed, .closedByPeer:
        return .connectionFailed(error.description)
      }
    case .closed(let info):
      return .closed(info)
    case .cancelled:
      return .cancelled
    }
  }

  // MARK: Store

  /// Appends an inbound record to the store (unless the store has its id already); returns
  /// its seq, or for a duplicate the last seq stored.
  func storeInbound(_ record: InboundMessage) -> UInt64 {
    // The time of the read that brought the frame (records come only from the client's reads).
    let time = readTime
    let seq: UInt64
    if record.hasID {
      let (appended, duplicate) = store.appendInbound(
        room: record.room, id: record.id, meta: record.meta, payload: record.payload,
        scan: record.scan, time: time)
      if duplicate {
        logger.debug("inbound message already stored; dropped", ["room": roomText(record.room)])
        return appended
      }
      seq = appended
    } else {
      // Without an id there is nothing to look up: straight to the store.
      seq = store.append(
        direction: .inbound, room: record.room, meta: record.meta, payload: record.payload,
        scan: record.scan, time: time)
    }
    if case .notJSON = record.scan {
      logger.debug("inbound frame is not JSON; stored as text", ["seq": String(seq)])
    }
    onInbound?(record, seq, time)
    checkBackpressure()
    return seq
  }

  private func roomText(_ room: [UInt8]?) -> String {
    room.map { String(decoding: $0, as: UTF8.self) } ?? "null"
  }

  /// Stores the "out" record of each confirmed entry, with the frame that went out.
  func storeOutbound(_ confirmed: ArraySlice<DeliveryLedger.Sent>) {
    // Our own envelope is JSON on one line, so the store need not scan it. (Protocol=raw
    // frames are the user's text, which may not be JSON: those are scanned.)
    let scan: PayloadScan = ownFramesAreJSON ? .json(hasLineBreaks: false) : .unscanned
    // One confirmation (a pong covers a whole burst) is one moment: one clock read.
    let time = Timestamp.now()
    // By index, and the room once a batch: taking each entry out of the slice, and its room
    // out of the entry, counted references for every message.
    var room: [UInt8]?
    for i in confirmed.indices {
      if i == confirmed.startIndex || !confirmed[i].entry.isInBatch(of: confirmed[i - 1].entry) {
        room = confirmed[i].entry.room?.json
      }
      let clientID = confirmed[i].entry.clientID
      confirmed[i].frame.withBytes { payload, isText in
        store.append(
          direction: .outbound, room: room, clientID: clientID, payload: payload, isText: isText,
          scan: scan, time: time)
      }
    }
    onConfirmed?(confirmed)
  }

  /// Pauses reading while the store is behind (`MessageStore.isBehind`) and resumes once it
  /// has caught up, so memory stays bounded when the disk is slower than the network.
  func checkBackpressure() {
    if !readingPaused, store.isBehind {
      feed(.storeBehind(true))
    } else if readingPaused, store.hasCaughtUp {
      feed(.storeBehind(false))
    }
  }

  // MARK: Log

  func log(_ report: LinkReport) {
    switch report {
    case .connected(let handshake):
      var extras: [String] = []
      if let subprotocol = handshake.subprotocol { extras.append("subprotocol \(subprotocol)") }
      if let deflate = handshake.deflate { extras.append(deflate.description) }
      logger.info(
        "connected",
        [
          "url": displayURL, "peer": client?.peerDescription ?? "",
          "extensions": extras.joined(separator: ", "),
        ])
    case .failed(let problem):
      logger.error("connection failed", ["url": displayURL, "error": problem])
    case .disconnected(let text, let code, let retryIn, let failures):
      logger.info(
        "disconnected",
        [
          "reason": text, "close_code": code.map(String.init) ?? "",
          "retry_in": retryIn.secondsText, "failures": String(failures),
        ])
    case .peerSilent(let timeout):
      logger.warning(
        "backend stopped answering; reconnecting", ["timeout": "\(timeout.secondsText) s"])
    case .readingPaused:
      logger.debug("store is behind; pausing reads", ["backlog_bytes": String(store.backlogBytes)])
    case .reconnectRequested(let reason):
      logger.notice("reconnect requested", ["reason": reason])
    case .protocolProblem(let problem):
      logger.warning("unexpected frame from the backend", ["problem": problem])
    case .historyGap(let room):
      logger.warning(
        "the backend's history no longer reaches back to the newest stored message; "
          + "messages in between may be missing", ["room": room])
    case .protocolNotice(.grantedLess(let filter, let asked, let granted)):
      logger.warning(
        "the broker granted a lower QoS than asked",
        ["topic": filter, "asked": String(asked), "granted": String(granted)])
    case .protocolNotice(.sessionResumed(let id)):
      logger.info("resumed the backend session", ["session": id])
    case .protocolNotice(.resumptionRefused):
      logger.notice(
        "the backend could not resume the last session; a new one starts, and what it held "
          + "unacknowledged is lost with the old one")
    }
  }
}
