import ChatLinkAPI
import EventLoop
import JSON
import LinkCore
import TestSupport
import Varlink
import XCTest

@testable import ChatLinkDaemon

/// The control socket's methods against a fake daemon: what each asks of the daemon, what it
/// answers, and how it refuses.
final class ControlServiceTests: XCTestCase {
  private var fixture: ControlFixture!
  private var target: FakeTarget { fixture.target }
  private let daemon = "io.chatlink.Daemon."

  override func setUpWithError() throws {
    fixture = try ControlFixture()
  }

  private func text(_ bytes: [UInt8]?) -> String {
    String(decoding: bytes ?? [], as: UTF8.self)
  }

  private func entry(_ id: String, room: String?, count: UInt64) -> OutboxEntry {
    OutboxEntry(
      id: id, room: room.flatMap(RoomID.init), text: "hi", count: count, created: .now())
  }

  // MARK: The table

  func testEveryMethodOfTheInterfaceIsServedAndOnlyReadingMethodsAreReadOnly() {
    let served = Set(ControlService.methods.keys)
    let declared = Set(ChatLinkInterface.methods.map { $0.qualifiedName })
    XCTAssertEqual(
      served,
      declared.union([GetInfoMethod.qualifiedName, GetInterfaceDescriptionMethod.qualifiedName]))
    XCTAssertEqual(
      Set(ControlService.methods.filter(\.value.readOnly).keys),
      [
        "org.varlink.service.GetInfo", "org.varlink.service.GetInterfaceDescription",
        daemon + "GetStatus", daemon + "ListRooms", daemon + "GetMetrics",
      ])
  }

  // MARK: Each method

  func testGetStatusAnswersWithTheDaemonsStatusInTheDocumentedOrder() throws {
    let client = try fixture.client()
    client.call(GetStatusMethod.self, EmptyObject())
    let reply = try XCTUnwrap(try client.rawReply())
    XCTAssertEqual(
      text(reply), #"{"parameters":"# + GetStatusReply(status: target.status).json.description + "}"
    )
    XCTAssertTrue(
      text(reply).hasPrefix(#"{"parameters":{"status":{"state":"open","text":"Connected"#))
  }

  func testGetInfoNamesTheProductAndBothInterfaces() throws {
    let client = try fixture.client()
    client.call(GetInfoMethod.self, EmptyObject())
    let info = try ServiceInfo(json: try client.reply().parameters)
    XCTAssertEqual(info.product, "chatlinkd")
    XCTAssertEqual(info.interfaces, ["org.varlink.service", "io.chatlink.Daemon"])
  }

  func testGetInterfaceDescriptionServesBothInterfacesAndRefusesAnUnknownOne() throws {
    let client = try fixture.client()
    for (name, description) in ChatLinkInterface.descriptions {
      client.call(GetInterfaceDescriptionMethod.self, InterfaceName(interface: name))
      XCTAssertEqual(try client.reply().parameters["description"]?.stringValue, description)
    }
    client.call(GetInterfaceDescriptionMethod.self, InterfaceName(interface: "io.example.Nope"))
    XCTAssertEqual(try client.error(), .interfaceNotFound("io.example.Nope"))
  }

  func testSendQueuesTheMessageAndAnswersWithItsReceiptOnceItIsDurable() throws {
    let client = try fixture.client()
    client.call(SendMethod.self, SendParameters(room: "ops", text: "deploy finished"))
    XCTAssertEqual(
      text(try client.rawReply()), #"{"parameters":{"id":"id1","state":"queued","count":1}}"#)
    XCTAssertEqual(target.queued.map(\.room), [RoomID("ops")])
    XCTAssertEqual(target.queued.map(\.text), ["deploy finished"])
  }

  func testTheReceiptsWrittenAsBytesAreTheTypedRepliesJSON() {
    let receipt = SendReceipt(id: "odd \"id\"\n", state: .queued, count: 12)
    for continues in [false, true] {
      XCTAssertEqual(
        ControlService.encodedReceipt(receipt, continues: continues),
        VarlinkReply(parameters: receipt.json, continues: continues).encoded)
    }
    // Drawn ids (written from their numbers) and given ones, one of them needing an escape.
    let ids: [ClientID] = [.given("a1"), .given("b\\2"), .generated(0x0123_4567_89ab_cdef)]
    let entries = OutboxEntry.batch(
      room: nil, texts: ["x", "y", "z"], ids: ids, firstCount: 7, created: .now())
    let batch = SendBatchReceipt(ids: ["a1", "b\\2", "0123456789abcdef"], count: 7)
    XCTAssertEqual(
      ControlService.encodedBatchReceipt(entries[...]),
      VarlinkReply(parameters: batch.json).encoded)
    XCTAssertEqual(
      ControlService.encodedBatchReceipt([]),
      VarlinkReply(parameters: SendBatchReceipt(ids: [], count: 0).json).encoded)
  }

  func testSendWithoutARoomGoesToTheDefaultRoomAndNeedsOne() throws {
    let client = try fixture.client()
    client.call(daemon + "Send", json(#"{"text":"hi","id":"a1"}"#))
    XCTAssertNil(try client.reply().error)
    XCTAssertEqual(target.queued.first?.room, RoomID("7"))
    XCTAssertEqual(target.queued.first?.id, "a1")
    target.defaultRoom = nil
    client.call(daemon + "Send", json(#"{"text":"hi"}"#))
    XCTAssertEqual(
      DaemonError(try XCTUnwrap(try client.error())),
      .invalidParameter(parameter: "room", reason: "no room given and no Rooms= configured"))
  }

  func testARoomIsRefusedWhenTheProtocolHasNone() throws {
    target.hasRooms = false
    let client = try fixture.client()
    client.call(SendMethod.self, SendParameters(room: "7", text: "hi"))
    XCTAssertEqual(
      DaemonError(try XCTUnwrap(try client.error())),
      .invalidParameter(parameter: "room", reason: "Protocol=raw has no rooms"))
    client.call(JoinMethod.self, RoomParameters(room: "7"))
    XCTAssertEqual(
      DaemonError(try XCTUnwrap(try client.error())),
      .invalidParameter(parameter: "room", reason: "Protocol=raw has no rooms"))
    client.call(SendMethod.self, SendParameters(text: "no room: fine"))
    XCTAssertNil(try client.reply().error)
    XCTAssertEqual(target.queued.map(\.room), [nil])
    XCTAssertEqual(target.joined, [])
  }

  func testSendIsRefusedWithStorageFailedWhileTheStoreCannotWrite() throws {
    target.storeFailure = "No space left on device"
    let client = try fixture.client()
    client.call(SendMethod.self, SendParameters(room: "7", text: "hi"))
    XCTAssertEqual(
      try client.error(),
      .named(
        "io.chatlink.Daemon.StorageFailed",
        json(#"{"reason":"the store cannot write: No space left on device"}"#)))
    client.call(SendBatchMethod.self, SendBatchParameters(room: "7", texts: ["a"]))
    XCTAssertEqual(try client.error()?.name, "io.chatlink.Daemon.StorageFailed")
    XCTAssertTrue(target.queued.isEmpty)
  }

  func testSendIsRefusedWithOutboxFullWhenTheOutboxHoldsItsLimit() throws {
    target.outboxLimit = 2
    let client = try fixture.client()
    client.call(SendBatchMethod.self, SendBatchParameters(room: "7", texts: ["a", "b"]))
    XCTAssertNil(try client.reply().error)
    client.call(SendMethod.self, SendParameters(room: "7", text: "c"))
    XCTAssertEqual(
      try client.error(), .named("io.chatlink.Daemon.OutboxFull", json(#"{"limit":2}"#)))
  }

  func testSendWithMoreRepliesQueuedThenSentThenConfirmedBeforeTheNextCallsReply() throws {
    let client = try fixture.client()
    client.call(SendMethod.self, SendParameters(room: "7", text: "hi", id: "a1"), more: true)
    client.call(ListRoomsMethod.self, EmptyObject())
    XCTAssertEqual(
      text(try client.rawReply()),
      #"{"parameters":{"id":"a1","state":"queued","count":1},"continues":true}"#)
    fixture.service.publishSent([entry("a1", room: "7", count: 1)])
    XCTAssertEqual(
      text(try client.rawReply()),
      #"{"parameters":{"id":"a1","state":"sent","count":1},"continues":true}"#)
    XCTAssertFalse(try client.hasReply(within: 50_000), "ListRooms answered before the send")
    fixture.service.publishConfirmed([
      entry("a0", room: "7", count: 0), entry("a1", room: "7", count: 1),
    ])
    XCTAssertEqual(
      text(try client.rawReply()), #"{"parameters":{"id":"a1","state":"confirmed","count":1}}"#)
    XCTAssertEqual(try client.reply().parameters, json(#"{"rooms":["7","ops"]}"#))
    XCTAssertEqual(fixture.server.watchedSendCount, 0)
  }

  func testSendBatchQueuesEveryTextInOrderAndAnswersWithTheirIds() throws {
    let client = try fixture.client()
    client.call(SendBatchMethod.self, SendBatchParameters(room: "7", texts: ["a", "b", "c"]))
    XCTAssertEqual(
      text(try client.rawReply()),
      #"{"parameters":{"ids":["id1","id2","id3"],"count":1,"state":"queued"}}"#)
    XCTAssertEqual(target.queued.map(\.text), ["a", "b", "c"])
    // Whether a full outbox holds it or refuses it is the caller's choice.
    client.call(SendBatchMethod.self, SendBatchParameters(texts: ["d"], waitForRoom: true))
    _ = try client.rawReply()
    XCTAssertEqual(target.batchesWaitingForRoom, [false, true])
  }

  func testSendBatchTextsWithEscapesReachTheOutboxAsTheyWereMeant() throws {
    // Read from the request's text without a tree: escapes, non-ASCII and blanks as JSON has
    // them, whatever the client's spacing.
    let client = try fixture.client()
    client.write(
      Array(
        #"{"method":"io.chatlink.Daemon.SendBatch","parameters":{ "texts" : [ "say \"hi\"" , "\u00e9😀\n", "a\\b" ] , "room" : 7 }}"#
          .utf8) + [0])
    XCTAssertEqual(
      text(try client.rawReply()),
      #"{"parameters":{"ids":["id1","id2","id3"],"count":1,"state":"queued"}}"#)
    XCTAssertEqual(target.queued.map(\.text), ["say \"hi\"", "é😀\n", "a\\b"])
    XCTAssertEqual(target.queued.map(\.room), [RoomID("7"), RoomID("7"), RoomID("7")])
  }

  func testASendBatchIsAnsweredTheMomentItIsDurableNotAtTheEndOfTheLoopIteration() throws {
    // The daemon goes on, in the same iteration, to send the batch to the backend; the client
    // waits for this reply before it sends more.
    target.holdsBatches = true
    let client = try fixture.client()
    client.call(SendBatchMethod.self, SendBatchParameters(room: "7", texts: ["a", "b"]))
    try spin(fixture.loop) { target.heldBatch != nil }
    target.heldBatch?()
    XCTAssertEqual(
      text(client.receivedWithoutRunningTheLoop()),
      #"{"parameters":{"ids":["id1","id2"],"count":1,"state":"queued"}}"# + "\0")
  }

  func testASendBatchWithOneBadTextQueuesNothing() throws {
    let client = try fixture.client()
    client.call(daemon + "SendBatch", json(#"{"room":"7","texts":["good",5]}"#))
    XCTAssertEqual(
      DaemonError(try XCTUnwrap(try client.error())),
      .invalidParameter(parameter: "texts", reason: "message 1 is not a string"))
    XCTAssertTrue(target.queued.isEmpty)
  }

  func testJoinAndLeaveAskTheDaemonAndAnswerWithNothing() throws {
    let client = try fixture.client()
    client.call(daemon + "Join", json(#"{"room":42}"#))
    XCTAssertEqual(try client.reply().parameters, .object([]))
    client.call(LeaveMethod.self, RoomParameters(room: "ops"))
    XCTAssertEqual(try client.reply().parameters, .object([]))
    XCTAssertEqual(target.joined, [RoomID("42")])
    XCTAssertEqual(target.left, [RoomID("ops")])
  }

  func testListRoomsAnswersWithTheDaemonsRooms() throws {
    target.rooms = ["7", "ops", "random"]
    let client = try fixture.client()
    client.call(ListRoomsMethod.self, EmptyObject())
    XCTAssertEqual(try ListRoomsReply(json: try client.reply().parameters).rooms, target.rooms)
  }

  func testHistoryPassesTheQueryAndAnswersWithTheRecordsOldestFirst() throws {
    let records = [
      StoredRecord(
        seq: 42, time: "2026-12-02T12:00:00.123456Z", direction: .inbound, room: .int(7),
        type: .json, data: json(#"{"event":"message","data":{"message":"hi"}}"#)),
      StoredRecord(
        seq: 43, time: "2026-12-02T12:00:00.200000Z", direction: .inbound, room: nil,
        type: .text, data: .string("not JSON")),
    ]
    target.records = .success(records)
    let client = try fixture.client()
    client.call(
      HistoryMethod.self,
      HistoryParameters(room: "7", sinceSeq: 41, sinceTime: "2026-12-02T13:00:00+01:00", limit: 2))
    XCTAssertEqual(try HistoryReply(json: try client.reply().parameters).records, records)
    XCTAssertEqual(
      target.queries,
      [
        HistoryQuery(
          room: RoomID("7"), sinceSeq: 41, sinceTime: Timestamp(rfc3339: "2026-12-02T12:00:00Z"),
          limit: 2)
      ])
    client.call(HistoryMethod.self, HistoryParameters())
    XCTAssertNil(try client.reply().error)
    XCTAssertEqual(target.queries.last, HistoryQuery(limit: 100))
  }

  func testAHistoryTheStoreCannotReadIsStorageFailed() throws {
    target.records = .failure(.storageFailed(reason: "open messages.jsonl: Permission denied"))
    let client = try fixture.client()
    client.call(HistoryMethod.self, HistoryParameters())
    XCTAssertEqual(
      DaemonError(try XCTUnwrap(try client.error())),
      .storageFailed(reason: "open messages.jsonl: Permission denied"))
  }

  func testSubscribeWithoutMoreIsRefused() throws {
    let client = try fixture.client()
    client.call(SubscribeMethod.self, SubscribeParameters())
    XCTAssertEqual(
      DaemonError(try XCTUnwrap(try client.error())),
      .invalidParameter(parameter: "more", reason: #"Subscribe streams: call it with "more": true"#)
    )
    XCTAssertFalse(fixture.service.hasSubscribers)
  }

  func testSubscribeStartsWithTheStatusAndStreamsTheEventsOfItsRoom() throws {
    let client = try fixture.client()
    XCTAssertFalse(fixture.service.hasSubscribers)
    client.call(SubscribeMethod.self, SubscribeParameters(room: "7"), more: true)
    func next() throws -> DaemonEvent {
      let reply = try client.reply()
      XCTAssertTrue(reply.continues)
      return try SubscribeReply(json: reply.parameters).event
    }
    guard case .status(_, let text) = try next() else { return XCTFail("no status first") }
    XCTAssertEqual(text, target.status.text)
    XCTAssertTrue(fixture.service.hasSubscribers)
    fixture.service.publishSent([entry("b1", room: "ops", count: 1)])
    fixture.service.publishSent([entry("a1", room: "7", count: 2)])
    fixture.service.publishDisconnected(reason: "going away", code: 1001)
    guard case .sent(_, let id, let room) = try next() else { return XCTFail("no sent event") }
    XCTAssertEqual([id, room], ["a1", "7"])
    guard case .disconnected(_, let reason, let code) = try next() else {
      return XCTFail("no disconnected event")
    }
    XCTAssertEqual(reason, "going away")
    XCTAssertEqual(code, 1001)
  }

  func testSubscribersAreCountedUntilTheLastOneHangsUpAndTheDaemonHearsOfTheFirstAndTheLast()
    throws
  {
    var following: [Bool] = []
    fixture.service.onFollowingChanged = { following.append($0) }
    var first: ControlTestClient? = try fixture.client()
    var second: ControlTestClient? = try fixture.client()
    for client in [first, second] {
      client?.call(SubscribeMethod.self, SubscribeParameters(), more: true)
      _ = try client?.reply()
    }
    // A second Subscribe on the same connection replaces its filter (its replies wait behind
    // the first stream's): still one subscriber.
    first?.call(SubscribeMethod.self, SubscribeParameters(room: "7"), more: true)
    let seven = ControlConnection.Subscription.room(RoomID("7")!)
    try spin(fixture.loop) { fixture.server.all.contains { $0.subscription == seven } }
    XCTAssertTrue(fixture.server.all.contains { $0.subscription == seven })
    XCTAssertEqual(fixture.server.subscriberCount, 2)
    first = nil
    try spin(fixture.loop) { fixture.server.subscriberCount < 2 }
    XCTAssertEqual(fixture.server.subscriberCount, 1)
    XCTAssertTrue(fixture.service.hasSubscribers)
    second = nil
    try spin(fixture.loop) { !fixture.service.hasSubscribers }
    XCTAssertEqual(fixture.server.subscriberCount, 0)
    XCTAssertFalse(fixture.service.hasSubscribers)
    // Told once when the first stream started and once when the last ended, not for the
    // second subscriber, the replaced filter or the first to hang up.
    XCTAssertEqual(following, [true, false])
  }

  func testASubscriptionPassesItsRoomAndEventsAboutNoRoom() {
    let seven = ControlConnection.Subscription.room(RoomID("7")!)
    XCTAssertTrue(seven.passes(RoomID("7")))
    XCTAssertTrue(seven.passes(nil))
    XCTAssertFalse(seven.passes(RoomID("8")))
    XCTAssertTrue(ControlConnection.Subscription.everyRoom.passes(RoomID("8")))
    XCTAssertTrue(ControlConnection.Subscription.everyRoom.passes(nil))
  }

  func testAStoredMessageReachesSubscribersAsItsRecord() throws {
    let client = try fixture.client()
    client.call(SubscribeMethod.self, SubscribeParameters(), more: true)
    _ = try client.reply()
    let payload = Array(#"{"event":"message","data":{"room_id":7,"message":"hi"}}"#.utf8)
    fixture.service.publishMessage(
      StoreRecord(
        seq: 9, time: Timestamp(microseconds: 1_796_212_800_000_000), direction: .inbound,
        room: Array("7".utf8), payload: .text(payload)),
      scan: .unscanned, room: RoomID("7"))
    let event = try SubscribeReply(json: try client.reply().parameters).event
    guard case .message(_, let record, let room, let name) = event else {
      return XCTFail("\(event)")
    }
    XCTAssertEqual(room, "7")
    XCTAssertNil(name, "the envelope protocol does not name its events")
    XCTAssertEqual(
      record,
      StoredRecord(
        seq: 9, time: "2026-12-02T12:00:00.000000Z", direction: .inbound, room: .int(7),
        type: .json, data: json(String(decoding: payload, as: UTF8.self))))
  }

  func testASocketIOMessageEventCarriesTheEventName() throws {
    let client = try fixture.client()
    client.call(SubscribeMethod.self, SubscribeParameters(), more: true)
    _ = try client.reply()
    let payload = Array(#"{"event":"chat","args":[{"room_id":7}]}"#.utf8)
    fixture.service.publishMessage(
      StoreRecord(
        seq: 3, time: Timestamp(microseconds: 1_796_212_800_000_000), direction: .inbound,
        room: Array("7".utf8), payload: .text(payload)),
      scan: .json(hasLineBreaks: false), room: RoomID("7"), namedEvents: true)
    let event = try SubscribeReply(json: try client.reply().parameters).event
    guard case .message(_, _, _, let name) = event else { return XCTFail("\(event)") }
    XCTAssertEqual(name, "chat")
  }

  func testARefusedMessageEndsItsWatchedSendWithDeliveryFailedAndIsAnEvent() throws {
    let watcher = try fixture.client()
    let subscriber = try fixture.client()
    subscriber.call(SubscribeMethod.self, SubscribeParameters(), more: true)
    _ = try subscriber.reply()
    watcher.call(SendMethod.self, SendParameters(room: "7", text: "hi", id: "a1"), more: true)
    _ = try watcher.rawReply()
    fixture.service.publishFailed(entry("a1", room: "7", count: 1), reason: "muted")
    XCTAssertEqual(
      text(try watcher.rawReply()),
      #"{"error":"io.chatlink.Daemon.DeliveryFailed","parameters":{"id":"a1","reason":"muted"}}"#)
    XCTAssertEqual(fixture.server.watchedSendCount, 0)
    let event = try SubscribeReply(json: try subscriber.reply().parameters).event
    guard case .failed(_, let id, let room, let reason) = event else {
      return XCTFail("\(event)")
    }
    XCTAssertEqual([id, room, reason], ["a1", "7", "muted"])
  }

  func testReconnectAsksTheDaemonToReconnect() throws {
    let client = try fixture.client()
    client.call(ReconnectMethod.self, EmptyObject())
    XCTAssertEqual(try client.reply().parameters, .object([]))
    XCTAssertEqual(target.reconnects, 1)
  }

  func testPingAnswersWithTheRoundTripInMilliseconds() throws {
    let client = try fixture.client()
    client.call(PingMethod.self, EmptyObject())
    XCTAssertEqual(try PingReply(json: try client.reply().parameters).rttMs, 1.25)
  }

  func testPingWhileDisconnectedIsNotConnectedWithTheState() throws {
    target.ping = .failure(.notConnected(state: .waiting))
    let client = try fixture.client()
    client.call(PingMethod.self, EmptyObject())
    XCTAssertEqual(
      try client.error(), .named("io.chatlink.Daemon.NotConnected", json(#"{"state":"waiting"}"#)))
  }

  func testGetMetricsAnswersWithTheTargetsOpenMetricsText() throws {
    target.metrics = "# TYPE chatlink_connects counter\nchatlink_connects_total 7\n# EOF\n"
    let client = try fixture.client(readOnly: true)
    client.call(GetMetricsMethod.self, GetMetricsParameters())
    XCTAssertEqual(try GetMetricsReply(json: try client.reply().parameters).text, target.metrics)
    client.call(GetMetricsMethod.self, GetMetricsParameters(format: "prometheus"))
    XCTAssertNil(try client.reply().error)
    XCTAssertEqual(target.metricsFormats, [.openMetrics, .prometheus])
  }

  func testGetMetricsRefusesAnUnknownFormatNamingTheParameter() throws {
    let client = try fixture.client()
    client.call(GetMetricsMethod.self, GetMetricsParameters(format: "json"))
    XCTAssertEqual(
      try client.error(),
      .named(
        "io.chatlink.Daemon.InvalidParameter",
        json(#"{"parameter":"format","reason":"must be openmetrics or prometheus"}"#)))
    XCTAssertEqual(target.metricsFormats, [])
  }

  func testOnewayCallsAreCarriedOutWithoutAReply() throws {
    let client = try fixture.client()
    client.call(daemon + "Reconnect", oneway: true)
    client.call(ListRoomsMethod.self, EmptyObject())
    XCTAssertEqual(try client.reply().parameters, json(#"{"rooms":["7","ops"]}"#))
    XCTAssertEqual(target.reconnects, 1)
  }

  // MARK: Refusals

  func testAReadOnlyClientMayReadTheStatusButNothingElse() throws {
    let client = try fixture.client(readOnly: true)
    client.call(GetStatusMethod.self, EmptyObject())
    XCTAssertNil(try client.reply().error)
    client.call(ListRoomsMethod.self, EmptyObject())
    XCTAssertNil(try client.reply().error)
    client.call(GetInfoMethod.self, EmptyObject())
    XCTAssertNil(try client.reply().error)
    let refused: [(String, JSONValue)] = [
      (daemon + "Send", json(#"{"room":"7","text":"not allowed"}"#)),
      (daemon + "SendBatch", json(#"{"room":"7","texts":["not allowed"]}"#)),
      (daemon + "Join", json(#"{"room":"x"}"#)), (daemon + "Leave", json(#"{"room":"7"}"#)),
      (daemon + "History", .object([])), (daemon + "Reconnect", .object([])),
      (daemon + "Ping", .object([])), (daemon + "Nope", .object([])),
      ("io.example.Other.Method", .object([])),
    ]
    for (method, parameters) in refused {
      client.call(method, parameters)
      XCTAssertEqual(try client.error(), .permissionDenied, method)
    }
    client.call(SubscribeMethod.self, SubscribeParameters(), more: true)
    XCTAssertEqual(try client.error(), .permissionDenied)
    XCTAssertTrue(target.queued.isEmpty)
    XCTAssertEqual(target.joined + target.left, [])
    XCTAssertEqual(target.reconnects, 0)
  }

  func testAnUnknownMethodIsMethodNotFoundAndAnUnknownInterfaceInterfaceNotFound() throws {
    let client = try fixture.client()
    client.call(daemon + "Explode")
    XCTAssertEqual(try client.error(), .methodNotFound(daemon + "Explode"))
    client.call("org.varlink.service.Explode")
    XCTAssertEqual(try client.error(), .methodNotFound("org.varlink.service.Explode"))
    client.call("io.example.Other.Method")
    XCTAssertEqual(try client.error(), .interfaceNotFound("io.example.Other"))
    client.call(GetStatusMethod.self, EmptyObject())
    XCTAssertNil(try client.reply().error)
  }

  func testWrongParameterTypesGetInvalidParameterWithTheReasonAndTheConnectionStaysUsable()
    throws
  {
    let cases: [(method: String, parameters: String, parameter: String, reason: String)] = [
      ("Send", #"{"room":"7","text":5}"#, "text", "must be a string"),
      ("Send", #"{"room":"7"}"#, "text", "is required"),
      ("Send", #"{"room":"7","text":""}"#, "text", "is empty"),
      ("Send", #"{"room":["7"],"text":"x"}"#, "room", "must be a string"),
      ("Send", #"{"room":"7","text":"x","id":17}"#, "id", "must be a string"),
      ("Send", #"{"room":"a\u0001b","text":"x"}"#, "room", "invalid room name"),
      ("SendBatch", #"{"room":"7"}"#, "texts", "must be an array of strings"),
      ("SendBatch", #"{"room":"7","texts":"one"}"#, "texts", "must be an array of strings"),
      ("SendBatch", #"{"room":"7","texts":[]}"#, "texts", "must hold from 1 to 10000 messages"),
      ("SendBatch", #"{"room":"7","texts":["good",""]}"#, "texts", "message 1 is empty"),
      ("History", #"{"limit":"ten"}"#, "limit", "must be from 1 to 10000"),
      ("History", #"{"limit":0}"#, "limit", "must be from 1 to 10000"),
      ("History", #"{"since_seq":-1}"#, "since_seq", "must be a non-negative integer"),
      ("History", #"{"since_time":"yesterday"}"#, "since_time", "must be an RFC 3339 time"),
      ("History", #"{"since_time":5}"#, "since_time", "must be a string"),
      ("Join", #"{}"#, "room", "is required"),
      ("Join", #"{"room":{"a":1}}"#, "room", "must be a string"),
      ("Leave", #"{"room":true}"#, "room", "must be a string"),
    ]
    let client = try fixture.client()
    for item in cases {
      client.call(daemon + item.method, json(item.parameters))
      XCTAssertEqual(
        DaemonError(try XCTUnwrap(try client.error())),
        .invalidParameter(parameter: item.parameter, reason: item.reason),
        "\(item.method) \(item.parameters)")
    }
    client.call(daemon + "Subscribe", json(#"{"room":true}"#), more: true)
    XCTAssertEqual(
      DaemonError(try XCTUnwrap(try client.error())),
      .invalidParameter(parameter: "room", reason: "must be a string"))
    // org.varlink.service's own methods answer with org.varlink.service's error.
    client.call("org.varlink.service.GetInterfaceDescription", json(#"{"interface":5}"#))
    XCTAssertEqual(
      try client.error(), .invalidParameter(name: "interface", reason: "must be a string"))
    client.call(GetStatusMethod.self, EmptyObject())
    XCTAssertNil(try client.reply().error)
    XCTAssertTrue(target.queued.isEmpty, "an invalid Send was queued")
    XCTAssertTrue(target.queries.isEmpty)
    XCTAssertEqual(target.joined, [])
  }
}
