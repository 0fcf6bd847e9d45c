import ChatLinkAPI
import JSON
import LinkCore
import Varlink

/// One entry of the dispatch table: who may call the method, and its handler.
struct ControlMethod: Sendable {
  /// Whether callers with read-only access (anyone who can open the socket) may call it.
  let readOnly: Bool
  /// Reads the parameters and answers, now or in a completion.
  let run: @Sendable (ControlService, ControlRequest) throws(DaemonError) -> Void

  /// The entry of `method`: parameters that do not read are InvalidParameter, naming the
  /// parameter and why; anything else is up to `handler`, a method of the service.
  static func of<Method: VarlinkMethod>(
    _ method: Method.Type, readOnly: Bool = false,
    _ handler:
      @escaping @Sendable (ControlService) -> (Method.Parameters, ControlRequest)
      throws(DaemonError) -> Void
  ) -> (String, ControlMethod) {
    let entry = ControlMethod(readOnly: readOnly) { service, request throws(DaemonError) in
      let parameters: Method.Parameters
      do throws(APIDecodingError) {
        if let text = request.call.parametersText {
          parameters = try text.withUnsafeBytes { text in
            Result { () throws(APIDecodingError) in try Method.Parameters(validJSON: text) }
          }.get()
        } else {
          parameters = try Method.Parameters(json: request.call.parameters)
        }
      } catch {
        throw DaemonError(error)
      }
      try handler(service)(parameters, request)
    }
    return (Method.qualifiedName, entry)
  }
}

extension ControlService {
  /// Every method served, by the name a call carries. Read-only: what `status`, `rooms` and
  /// `metrics` need, and the service interface; the rest change something or read the messages.
  static let methods: [String: ControlMethod] = Dictionary(
    uniqueKeysWithValues: [
      ControlMethod.of(GetInfoMethod.self, readOnly: true, ControlService.getInfo),
      ControlMethod.of(
        GetInterfaceDescriptionMethod.self, readOnly: true, ControlService.describe),
      ControlMethod.of(GetStatusMethod.self, readOnly: true, ControlService.getStatus),
      ControlMethod.of(SendMethod.self, ControlService.send),
      ControlMethod.of(SendBatchMethod.self, ControlService.sendBatch),
      ControlMethod.of(JoinMethod.self, ControlService.join),
      ControlMethod.of(LeaveMethod.self, ControlService.leave),
      ControlMethod.of(ListRoomsMethod.self, readOnly: true, ControlService.listRooms),
      ControlMethod.of(HistoryMethod.self, ControlService.history),
      ControlMethod.of(SubscribeMethod.self, ControlService.subscribe),
      ControlMethod.of(ReconnectMethod.self, ControlService.reconnect),
      ControlMethod.of(PingMethod.self, ControlService.ping),
      ControlMethod.of(GetMetricsMethod.self, readOnly: true, ControlService.getMetrics),
    ])

  /// GetInfo's reply.
  static let info = ServiceInfo(
    vendor: "ChatLink", product: "chatlinkd", version: ChatLinkVersion.current,
    url: "https://github.com/chatlink/chatlink",
    interfaces: ["org.varlink.service", ChatLinkInterface.name])

  private func getInfo(_: EmptyObject, _ request: ControlRequest) {
    request.reply(Self.info)
  }

  private func getStatus(_: EmptyObject, _ request: ControlRequest) {
    request.reply(GetStatusReply(status: target.status))
  }

  private func getMetrics(_ parameters: GetMetricsParameters, _ request: ControlRequest)
    throws(DaemonError)
  {
    var format = OpenMetricsRenderer.Format.openMetrics
    if let name = parameters.format {
      guard let named = OpenMetricsRenderer.Format(rawValue: name) else {
        throw .invalidParameter(parameter: "format", reason: "must be openmetrics or prometheus")
      }
      format = named
    }
    request.reply(GetMetricsReply(text: target.metricsText(format)))
  }

  private func listRooms(_: EmptyObject, _ request: ControlRequest) {
    request.reply(ListRoomsReply(rooms: target.rooms))
  }

  private func join(_ parameters: RoomParameters, _ request: ControlRequest) throws(DaemonError) {
    target.join(try roomToJoin(parameters.room))
    request.reply(EmptyObject())
  }

  private func leave(_ parameters: RoomParameters, _ request: ControlRequest) throws(DaemonError) {
    target.leave(try roomToJoin(parameters.room))
    request.reply(EmptyObject())
  }

  private func reconnect(_: EmptyObject, _ request: ControlRequest) {
    target.reconnect(reason: "requested over the control socket")
    request.reply(EmptyObject())
  }

  private func ping(_: EmptyObject, _ request: ControlRequest) {
    target.ping { result in
      switch result {
      case .success(let rtt): request.reply(PingReply(rttMs: rtt.inSeconds * 1000))
      case .failure(let error): request.fail(error)
      }
    }
  }

  private func describe(_ parameters: InterfaceName, _ request: ControlRequest)
    throws(DaemonError)
  {
    guard let text = ChatLinkInterface.descriptions[parameters.interface] else {
      throw .varlink(.interfaceNotFound(parameters.interface))
    }
    request.reply(InterfaceDescription(description: text))
  }

  private func send(_ parameters: SendParameters, _ request: ControlRequest) throws(DaemonError) {
    let room = try roomToSendTo(parameters.room)
    let call = request.call
    target.enqueue(room: room, text: parameters.text, id: parameters.id) { result in
      guard let connection = request.open else { return }
      switch result {
      case .success(let receipt):
        if call.more { connection.watchSend(receipt.id, call: call) }
        connection.send(
          Self.encodedReceipt(receipt, continues: call.more), to: call, final: !call.more)
      case .failure(let error):
        request.fail(error)
      }
    }
  }

  private func sendBatch(_ parameters: SendBatchParameters, _ request: ControlRequest)
    throws(DaemonError)
  {
    let room = try roomToSendTo(parameters.room)
    target.enqueue(room: room, texts: parameters.texts, waitForRoom: parameters.waitForRoom) {
      result in
      guard let connection = request.open else { return }
      switch result {
      case .success(let entries):
        // Written now, not at the end of the loop iteration: the same iteration goes on to
        // send the batch to the backend, and the client waits for this reply to send more.
        connection.send(
          Self.encodedBatchReceipt(entries), to: request.call, final: true, flush: true)
      case .failure(let error):
        request.fail(error)
      }
    }
  }

  /// Send's and SendBatch's room (the default room when none is given), once the store is
  /// known to be writable.
  private func roomToSendTo(_ name: String?) throws(DaemonError) -> RoomID? {
    var room = try roomID(name)
    if target.hasRooms && room == nil { room = target.defaultRoom }
    if target.hasRooms && room == nil {
      throw .invalidParameter(parameter: "room", reason: "no room given and no Rooms= configured")
    }
    if !target.hasRooms && room != nil {
      throw .invalidParameter(parameter: "room", reason: "Protocol=raw has no rooms")
    }
    if let failure = target.storeFailure {
      // The outbox shares the disk: refuse clearly instead of accepting what cannot be kept.
      throw .storageFailed(reason: "the store cannot write: \(failure)")
    }
    return room
  }

  /// Join's and Leave's room.
  private func roomToJoin(_ name: String) throws(DaemonError) -> RoomID {
    guard let room = try roomID(name) else {
      throw .invalidParameter(parameter: "room", reason: "is required")
    }
    guard target.hasRooms else {
      throw .invalidParameter(parameter: "room", reason: "Protocol=raw has no rooms")
    }
    return room
  }

  private func history(_ parameters: HistoryParameters, _ request: ControlRequest)
    throws(DaemonError)
  {
    var query = HistoryQuery(
      room: try roomID(parameters.room), sinceSeq: parameters.sinceSeq.map(UInt64.init(clamping:)),
      limit: parameters.limit ?? HistoryParameters.defaultLimit)
    if let since = parameters.sinceTime {
      guard let time = Timestamp(rfc3339: since) else {
        throw .invalidParameter(parameter: "since_time", reason: "must be an RFC 3339 time")
      }
      query.sinceTime = time
    }
    target.history(query) { result in
      switch result {
      case .success(let records): request.reply(HistoryReply(records: records))
      case .failure(let error): request.fail(error)
      }
    }
  }

  private func subscribe(_ parameters: SubscribeParameters, _ request: ControlRequest)
    throws(DaemonError)
  {
    guard request.call.more else {
      throw .invalidParameter(
        parameter: "more", reason: "Subscribe streams: call it with \"more\": true")
    }
    let room = try roomID(parameters.room)
    guard let connection = request.open else { return }
    connection.subscribe(request.call, room: room)
    let first = DaemonEvent.status(time: Self.now, text: target.status.text)
    connection.push(VarlinkReply(parameters: SubscribeReply(event: first).json, continues: true))
  }

  /// The time of an event.
  static var now: String { Timestamp.now().rfc3339 }
}
