import ChatLinkAPI
import JSON
import Varlink

/// A typed client of io.chatlink.Daemon. Every call opens no new connection: one client,
/// one socket.
public final class ChatLinkClient {
  /// Where packages put the socket.
  public static let defaultSocket = Instance.defaultSocket

  private let connection: VarlinkConnection

  /// Connects to the daemon; with a `timeout`, no call waits longer than that.
  public init(socketPath: String = ChatLinkClient.defaultSocket, timeout: Duration? = nil)
    throws(ClientError)
  {
    connection = try VarlinkConnection(path: socketPath, timeout: timeout)
  }

  /// org.varlink.service.GetInfo.
  public func info() throws(ClientError) -> ServiceInfo {
    try Self.decode(try call(GetInfoMethod.self, EmptyObject()))
  }

  /// The daemon's status, with the object as it came for `--json`.
  public func status() throws(ClientError) -> Received<DaemonStatus> {
    try Self.decode(try call(GetStatusMethod.self, EmptyObject())["status"] ?? .null, "status")
  }

  /// Sends a message; returns once it is durable in the outbox, or with `wait` once the
  /// backend confirmed it.
  public func send(_ parameters: SendParameters, wait: Bool = false) throws(ClientError)
    -> Received<SendReceipt>
  {
    guard wait else { return try Self.decode(try call(SendMethod.self, parameters)) }
    try connection.send(
      VarlinkCall(method: SendMethod.qualifiedName, parameters: parameters.json, more: true))
    while true {
      let reply = try connection.receive()
      let receipt: Received<SendReceipt> = try Self.decode(reply.parameters)
      if receipt.state == .confirmed || !reply.continues { return receipt }
    }
  }

  /// Sends many messages over this one connection: SendBatch calls of up to `batchCount`
  /// messages (and about `batchBytes` of request), pipelined so that up to `window` of them
  /// are unanswered while the next is filled. `onReceipt` gets one receipt per message, in
  /// order. Each batch is all or none, and waits for room in a full outbox (the daemon takes
  /// the waiting calls in order): a stream goes as fast as the backend confirms it. When the
  /// daemon refuses one (the disk fails, say), no more are sent, the replies to those already
  /// sent are still read and their receipts given, and then the refusal is thrown: a receipt
  /// is given for every message accepted. A message too long for any request the daemon takes
  /// (`requestLimit`) is not sent: the messages before it are, and then that is thrown.
  public func sendMany(
    _ texts: some Sequence<String>, room: String?, onReceipt: (SendReceipt) -> Void
  ) throws(ClientError) {
    var iterator = texts.makeIterator()
    try sendMany(
      room: room, onReceipts: { $0.receipts.forEach(onReceipt) },
      next: { body in
        guard var text = iterator.next() else { return false }
        text.withUTF8 { body(UnsafeRawBufferPointer($0)) }
        return true
      })
  }

  /// `sendMany` with each message given by `next` as its UTF-8 bytes, read where they lie (a
  /// line of input, without a string made of it): `next` calls its argument with the next
  /// message and returns true, or returns false when there are no more. `onReceipts` gets
  /// each batch's receipt as the daemon gave it (its ids in one buffer), in order.
  public func sendMany(
    room: String?, onReceipts: (SendBatchReceipt) -> Void,
    next: (_ body: (UnsafeRawBufferPointer) -> Void) -> Bool
  ) throws(ClientError) {
    // Short lines fill a batch by count, long ones by bytes; each waits for room.
    let batchCount = 1024
    // The daemon refuses requests over 64 KiB; a line longer than this goes alone.
    let batchBytes = 48 * 1024
    let window = 4
    let opening = Self.batchOpening(room: room)
    var request = opening
    var item: [UInt8] = []
    var queued = 0
    var inFlight = 0
    func finishBatch() throws(ClientError) {
      request += [UInt8(ascii: "]"), UInt8(ascii: "}"), UInt8(ascii: "}"), 0]
      try connection.write(request)
      request.removeAll(keepingCapacity: true)
      request += opening
      queued = 0
      inFlight += 1
    }
    var refusal: ClientError?
    var (tooLong, messages): (ClientError?, Int) = (nil, 0)
    func receiveBatch() throws(ClientError) {
      let reply: SendBatchReceipt
      do {
        reply = try Self.decode(try connection.receive())
        inFlight -= 1
      } catch {
        guard case .varlink = error else { throw error }
        inFlight -= 1
        refusal = refusal ?? error
        return
      }
      onReceipts(reply)
    }
    while true {
      item.removeAll(keepingCapacity: true)
      guard next({ JSONString.append($0, to: &item) }) else { break }
      messages += 1
      // Too long even alone (with the opening and `]}}`): the daemon would close the
      // connection, and the receipts of the calls before it would go with it.
      guard opening.count + item.count + 3 <= Self.requestLimit else {
        tooLong = Self.tooLong(message: messages, bytes: item.count - 2)
        break
      }
      if queued > 0 && (queued == batchCount || request.count + item.count > batchBytes) {
        try finishBatch()
        while inFlight >= window { try receiveBatch() }
        if refusal != nil { break }
      }
      if queued > 0 { request.append(UInt8(ascii: ",")) }
      request += item
      queued += 1
    }
    if queued > 0 && refusal == nil { try finishBatch() }
    while inFlight > 0 { try receiveBatch() }
    if let refusal = refusal ?? tooLong { throw refusal }
  }

  /// The largest request the daemon reads (NUL excluded): ChatLinkDaemon's
  /// `ControlServer.requestLimit`. A longer one is refused and the connection closed.
  public static let requestLimit = 64 * 1024

  /// A SendBatch request up to its first text.
  private static func batchOpening(room: String?) -> [UInt8] {
    var opening: [UInt8] = Array(#"{"method":"#.utf8)
    JSONString.append(SendBatchMethod.qualifiedName, to: &opening)
    opening += Array(#","parameters":{"#.utf8)
    if let room {
      opening += Array(#""room":"#.utf8)
      JSONString.append(room, to: &opening)
      opening.append(UInt8(ascii: ","))
    }
    return opening + Array(#""wait_for_room":true,"texts":["#.utf8)
  }

  /// Why message `message` (the 1-based place in the stream), `bytes` long as JSON, was not sent.
  private static func tooLong(message: Int, bytes: Int) -> ClientError {
    .varlink(
      .invalidParameter(
        name: "texts",
        reason:
          "message \(message) is \(bytes) bytes, more than one request to chatlinkd may hold "
          + "(\(requestLimit) bytes); it and the messages after it were not sent"))
  }

  /// Joins a room, now and after every reconnect.
  public func join(_ room: String) throws(ClientError) {
    _ = try call(JoinMethod.self, RoomParameters(room: room))
  }

  /// Leaves a room.
  public func leave(_ room: String) throws(ClientError) {
    _ = try call(LeaveMethod.self, RoomParameters(room: room))
  }

  /// The rooms the daemon is in.
  public func rooms() throws(ClientError) -> [String] {
    let reply: ListRoomsReply = try Self.decode(try call(ListRoomsMethod.self, EmptyObject()))
    return reply.rooms
  }

  /// Stored records, newest last, each with the object as it came for `--json` (the JSON
  /// object of its line in messages.jsonl).
  public func history(_ parameters: HistoryParameters = HistoryParameters()) throws(ClientError)
    -> [Received<StoredRecord>]
  {
    let reply = try call(HistoryMethod.self, parameters)
    guard case .array(let records) = reply["records"] ?? .null else {
      throw .protocolError("records must be an array")
    }
    var received: [Received<StoredRecord>] = []
    received.reserveCapacity(records.count)
    for (index, record) in records.enumerated() {
      received.append(try Self.decode(record, "records[\(index)]"))
    }
    return received
  }

  /// Streams events until `handler` returns false or the connection ends.
  public func subscribe(
    _ parameters: SubscribeParameters = SubscribeParameters(),
    handler: (Received<DaemonEvent>) -> Bool
  ) throws(ClientError) {
    try connection.send(
      VarlinkCall(method: SubscribeMethod.qualifiedName, parameters: parameters.json, more: true))
    while true {
      let reply = try connection.receive()
      let event: Received<DaemonEvent> = try Self.decode(
        reply.parameters["event"] ?? .null, "event")
      if !handler(event) || !reply.continues { return }
    }
  }

  /// Drops the backend connection and connects again now.
  public func reconnect() throws(ClientError) {
    _ = try call(ReconnectMethod.self, EmptyObject())
  }

  /// The round trip to the backend in milliseconds.
  public func ping() throws(ClientError) -> Double {
    let reply: PingReply = try Self.decode(try call(PingMethod.self, EmptyObject()))
    return reply.rttMs
  }

  /// The daemon's metrics: OpenMetrics text, or with `format` "prometheus" the classic text
  /// format.
  public func metrics(format: String? = nil) throws(ClientError) -> String {
    let reply: GetMetricsReply = try Self.decode(
      try call(GetMetricsMethod.self, GetMetricsParameters(format: format)))
    return reply.text
  }

  /// Calls a method that answers once; returns the reply's parameters.
  private func call<Method: VarlinkMethod>(_ method: Method.Type, _ parameters: Method.Parameters)
    throws(ClientError) -> JSONValue
  {
    try connection.call(Method.qualifiedName, parameters.json)
  }

  /// A reply's parameters, read from their text when the reply has it (no tree is built for a
  /// type that reads its text itself); parameters that do not read are the daemon's fault.
  private static func decode<Value: JSONRepresentable>(_ reply: VarlinkReply) throws(ClientError)
    -> Value
  {
    guard let text = reply.parametersText else { return try decode(reply.parameters) }
    do {
      return try text.withUnsafeBytes { text in
        Result { () throws(APIDecodingError) in try Value(validJSON: text) }
      }.get()
    } catch {
      throw .protocolError(error.description)
    }
  }

  /// Reads a typed value from the daemon's JSON; one that does not read is the daemon's fault.
  private static func decode<Value: JSONRepresentable>(_ json: JSONValue, _ field: String = "")
    throws(ClientError) -> Value
  {
    do {
      return try Value(json: json)
    } catch {
      throw .protocolError(field.isEmpty ? error.description : error.inside(field).description)
    }
  }

  private static func decode<Value: JSONRepresentable>(_ json: JSONValue, _ field: String = "")
    throws(ClientError) -> Received<Value>
  {
    Received(value: try decode(json, field), json: json)
  }
}

extension ClientError {
  /// The daemon's error, typed; nil when the daemon did not answer with one.
  public var daemonError: DaemonError? {
    guard case .varlink(let error) = self else { return nil }
    return DaemonError(error)
  }
}
