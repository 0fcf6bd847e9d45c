import ChatLinkAPI
import JSON
import Varlink

/// The daemon's status, as GetStatus returns it.
public struct DaemonStatus: Sendable, Hashable {
  public var state: String
  public var text: String
  public var url: String
  public var rooms: [String]
  public var subprotocol: String?
  public var extensions: String?
  public var retryIn: Double?
  public var lastError: String?
  public var storeError: String?
  public var received: Int
  public var sent: Int
  public var confirmed: Int
  public var connects: Int
  public var outbox: Int
  public var lastSeq: Int
  public var durableSeq: Int
  public var storePath: String
  public var version: String
  /// The reply as sent, for --json output with stable field names.
  public var json: JSONValue

  /// Reads the reply object.
  public init(_ v: JSONValue) {
    json = v
    state = v["state"]?.stringValue ?? ""
    text = v["text"]?.stringValue ?? ""
    url = v["url"]?.stringValue ?? ""
    rooms = v["rooms"]?.arrayValue?.compactMap(\.stringValue) ?? []
    subprotocol = v["subprotocol"]?.stringValue
    extensions = v["extensions"]?.stringValue
    retryIn = v["retry_in"]?.doubleValue
    lastError = v["last_error"]?.stringValue
    storeError = v["store_error"]?.stringValue
    received = Int(v["received"]?.intValue ?? 0)
    sent = Int(v["sent"]?.intValue ?? 0)
    confirmed = Int(v["confirmed"]?.intValue ?? 0)
    connects = Int(v["connects"]?.intValue ?? 0)
    outbox = Int(v["outbox"]?.intValue ?? 0)
    lastSeq = Int(v["last_seq"]?.intValue ?? 0)
    durableSeq = Int(v["durable_seq"]?.intValue ?? 0)
    storePath = v["store_path"]?.stringValue ?? ""
    version = v["version"]?.stringValue ?? ""
  }
}

/// One answer to Send.
public struct SendReceipt: Sendable, Hashable {
  /// The client message id.
  public var id: String
  /// queued (durable in the outbox), sent (written to the backend) or confirmed.
  public var state: String
  /// The outbox counter.
  public var count: Int
  public var json: JSONValue

  /// Reads the reply object.
  public init(_ v: JSONValue) {
    json = v
    id = v["id"]?.stringValue ?? ""
    state = v["state"]?.stringValue ?? ""
    count = Int(v["count"]?.intValue ?? 0)
  }

  /// A receipt from its parts (SendBatch answers for many messages in one reply).
  public init(id: String, state: String, count: Int) {
    self.init(.object(["id": .string(id), "state": .string(state), "count": .int(Int64(count))]))
  }
}

/// One event of Subscribe.
public struct DaemonEvent: Sendable, Hashable {
  /// connected, disconnected, message, sent, confirmed, error or status.
  public var event: String
  /// The whole event object, stable field names.
  public var json: JSONValue

  /// Reads the reply object.
  public init(_ v: JSONValue) {
    json = v
    event = v["event"]?.stringValue ?? ""
  }
}

/// A typed client of io.chatlink.Daemon. Every call opens no new connection: one client,
/// one socket.
public final class ChatLinkClient {
  /// Where packages put the socket.
  public static let defaultSocket = "/run/chatlink/control.sock"

  private let connection: VarlinkConnection
  private let method = ChatLinkInterface.name + "."

  /// Connects to the daemon.
  public init(socketPath: String = ChatLinkClient.defaultSocket) throws(ClientError) {
    connection = try VarlinkConnection(path: socketPath)
  }

  /// org.varlink.service.GetInfo.
  public func info() throws(ClientError) -> JSONValue {
    try connection.call("org.varlink.service.GetInfo")
  }

  public func status() throws(ClientError) -> DaemonStatus {
    DaemonStatus(try connection.call(method + "GetStatus")["status"] ?? .object([]))
  }

  /// Sends a message; returns once it is durable in the outbox, or with `wait` once the
  /// backend confirmed it.
  public func send(room: String?, text: String, id: String? = nil, wait: Bool = false)
    throws(ClientError) -> SendReceipt
  {
    let parameters = JSONValue.object([
      "room": room.map(JSONValue.string), "text": .string(text), "id": id.map(JSONValue.string),
    ])
    guard wait else { return SendReceipt(try connection.call(method + "Send", parameters)) }
    try connection.send(VarlinkCall(method: method + "Send", parameters: parameters, more: true))
    while true {
      let reply = try connection.receive()
      let receipt = SendReceipt(reply.parameters)
      if receipt.state == "confirmed" || !reply.continues { return receipt }
    }
  }

  /// Sends many messages over this one connection: SendBatch calls of up to `batchCount`
  /// messages (and about `batchBytes` of request), pipelined so that up to `window` of them
  /// are unanswered while the next is filled. `onReceipt` gets one receipt per message, in
  /// order. Each batch is all or none. When the daemon refuses one (the outbox is full, say),
  /// no more are sent, the replies to those already sent are still read and their receipts
  /// given, and then the refusal is thrown: a receipt is given for every message accepted.
  public func sendMany(
    _ texts: some Sequence<String>, room: String?, onReceipt: (SendReceipt) -> Void
  ) throws(ClientError) {
    let batchCount = 512
    // The daemon refuses requests over 64 KiB; a line longer than this goes alone.
    let batchBytes = 48 * 1024
    let window = 4
    var opening: [UInt8] = Array(#"{"method":"#.utf8)
    JSONString.append(method + "SendBatch", to: &opening)
    opening += Array(#","parameters":{"#.utf8)
    if let room {
      opening += Array(#""room":"#.utf8)
      JSONString.append(room, to: &opening)
      opening.append(UInt8(ascii: ","))
    }
    opening += Array(#""texts":["#.utf8)
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
    func receiveBatch() throws(ClientError) {
      let reply: JSONValue
      do {
        reply = try connection.receive().parameters
        inFlight -= 1
      } catch {
        guard case .varlink = error else { throw error }
        inFlight -= 1
        refusal = refusal ?? error
        return
      }
      let first = Int(reply["count"]?.intValue ?? 0)
      let state = reply["state"]?.stringValue ?? "queued"
      for (offset, id) in (reply["ids"]?.arrayValue ?? []).enumerated() {
        onReceipt(SendReceipt(id: id.stringValue ?? "", state: state, count: first + offset))
      }
    }
    for text in texts {
      item.removeAll(keepingCapacity: true)
      JSONString.append(text, to: &item)
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
    if let refusal { throw refusal }
  }

  public func join(_ room: String) throws(ClientError) {
    _ = try connection.call(method + "Join", .object(["room": .string(room)]))
  }

  public func leave(_ room: String) throws(ClientError) {
    _ = try connection.call(method + "Leave", .object(["room": .string(room)]))
  }

  public func rooms() throws(ClientError) -> [String] {
    try connection.call(method + "ListRooms")["rooms"]?.arrayValue?.compactMap(\.stringValue) ?? []
  }

  /// Stored records, newest last, each the JSON object of its line in messages.jsonl.
  public func history(
    room: String? = nil, sinceSeq: Int? = nil, sinceTime: String? = nil, limit: Int? = nil
  )
    throws(ClientError) -> [JSONValue]
  {
    let parameters = JSONValue.object([
      "room": room.map(JSONValue.string), "since_seq": sinceSeq.map { .int(Int64($0)) },
      "since_time": sinceTime.map(JSONValue.string), "limit": limit.map { .int(Int64($0)) },
    ])
    return try connection.call(method + "History", parameters)["records"]?.arrayValue ?? []
  }

  /// Streams events until `handler` returns false or the connection ends.
  public func subscribe(room: String? = nil, handler: (DaemonEvent) -> Bool) throws(ClientError) {
    try connection.send(
      VarlinkCall(
        method: method + "Subscribe", parameters: .object(["room": room.map(JSONValue.string)]),
        more: true))
    while true {
      let reply = try connection.receive()
      if !handler(DaemonEvent(reply.parameters["event"] ?? .object([]))) || !reply.continues {
        return
      }
    }
  }

  public func reconnect() throws(ClientError) {
    _ = try connection.call(method + "Reconnect")
  }

  /// The round trip to the backend in milliseconds.
  public func ping() throws(ClientError) -> Double {
    try connection.call(method + "Ping")["rtt_ms"]?.doubleValue ?? 0
  }
}
