import ChatLinkAPI
import JSON
import Varlink
import XCTest

/// The IDL text the daemon serves and the Swift types are one contract: these tests read the
/// text and fail when a method, a field, its order or its type differs between the two.
final class InterfaceDescriptionTests: XCTestCase {
  private var daemon: InterfaceDefinition!
  private var service: InterfaceDefinition!

  override func setUpWithError() throws {
    daemon = try InterfaceDefinition(ChatLinkInterface.description)
    service = try InterfaceDefinition(ChatLinkInterface.serviceDescription)
  }

  func testTheDescriptionsNameTheirInterfaces() {
    XCTAssertEqual(daemon.name, ChatLinkInterface.name)
    XCTAssertEqual(service.name, "org.varlink.service")
    XCTAssertEqual(
      Set(ChatLinkInterface.descriptions.keys), [ChatLinkInterface.name, "org.varlink.service"])
  }

  func testTheInterfaceDescriptionNamesEveryMethodAndError() {
    for method in [
      "GetStatus", "Send", "Join", "Leave", "ListRooms", "History", "Subscribe", "Reconnect",
      "Ping", "GetMetrics",
    ] {
      XCTAssertTrue(ChatLinkInterface.description.contains("method \(method)("), method)
    }
    for error in [
      "NotConnected", "OutboxFull", "StorageFailed", "InvalidParameter", "DeliveryFailed",
    ] {
      XCTAssertTrue(ChatLinkInterface.description.contains("error \(error) "), error)
    }
    XCTAssertTrue(ChatLinkInterface.description.contains("interface io.chatlink.Daemon\n"))
  }

  func testEveryMethodOfTheIDLHasATypeAndEveryTypeAMethodOfTheIDL() {
    XCTAssertEqual(
      Set(ChatLinkInterface.methods.map { $0.name }), Set(daemon.methods.keys),
      "ChatLinkInterface.methods and the IDL's methods differ")
    for method in ChatLinkInterface.methods {
      XCTAssertEqual(method.qualifiedName, "io.chatlink.Daemon." + method.name)
    }
  }

  func testEachMethodsParametersAndReplyAreTheIDLsFieldsInOrder() throws {
    for method in ChatLinkInterface.methods {
      let declared = try XCTUnwrap(daemon.methods[method.name], method.name)
      let types = Self.types(of: method)
      check(types.parameters, against: declared.parameters, in: daemon, "\(method.name) in")
      check(types.reply, against: declared.reply, in: daemon, "\(method.name) out")
    }
  }

  func testTheServiceMethodsAreTheIDLsFieldsInOrder() throws {
    let methods: [any ServiceMethod.Type] = [
      GetInfoMethod.self, GetInterfaceDescriptionMethod.self,
    ]
    XCTAssertEqual(Set(methods.map { $0.name }), Set(service.methods.keys))
    for method in methods {
      let declared = try XCTUnwrap(service.methods[method.name], method.name)
      XCTAssertEqual(method.qualifiedName, "org.varlink.service." + method.name)
      let types = Self.types(of: method)
      check(types.parameters, against: declared.parameters, in: service, "\(method.name) in")
      check(types.reply, against: declared.reply, in: service, "\(method.name) out")
    }
  }

  func testTheStatusIsTheIDLsStatusTypeInOrder() throws {
    let members = try XCTUnwrap(daemon.types["Status"])
    XCTAssertEqual(
      Self.fieldNames(of: Samples.status), members.map(\.name), "DaemonStatus's fields")
    XCTAssertEqual(Self.keys(Samples.status.json), members.map(\.name), "DaemonStatus's JSON")
    XCTAssertEqual(daemon.problems(Samples.status.json, as: "Status", at: "status"), [])
  }

  func testEveryEventKindIsTheIDLsEventTypeAndTogetherTheyUseAllOfIt() throws {
    let members = try XCTUnwrap(daemon.types["Event"])
    var used: Set<String> = []
    for event in Samples.events {
      let fields = ["event"] + Self.fieldNames(of: event)
      XCTAssertEqual(Self.keys(event.json), fields, "\(event.name): its fields and its JSON")
      XCTAssertEqual(daemon.problems(event.json, as: "Event", at: event.name), [])
      XCTAssertEqual(try DaemonEvent(json: event.json), event)
      used.formUnion(fields)
    }
    XCTAssertEqual(used, Set(members.map(\.name)), "the IDL's Event and the kinds' fields")
    XCTAssertEqual(
      Set(Samples.events.map(\.name)),
      [
        "connected", "disconnected", "message", "sent", "confirmed", "failed", "error", "status",
      ])
  }

  func testEveryErrorOfTheIDLIsADaemonErrorWithItsFields() throws {
    XCTAssertEqual(Set(Samples.errors.keys), Set(daemon.errors.keys))
    for (name, error) in Samples.errors {
      let members = try XCTUnwrap(daemon.errors[name])
      let wire = error.varlinkError
      XCTAssertEqual(wire.name, "io.chatlink.Daemon." + name)
      XCTAssertEqual(Self.keys(wire.parameters), members.map(\.name), name)
      XCTAssertEqual(daemon.problems(wire.parameters, members: members, at: name), [])
      XCTAssertEqual(Self.associatedValueCount(of: error), members.count, name)
      XCTAssertEqual(DaemonError(wire), error, "\(name) reads back")
    }
  }

  /// A field of a type that its JSON leaves out, or that the IDL does not have, fails here.
  private func check(
    _ type: any JSONRepresentable.Type, against members: [InterfaceDefinition.Member],
    in definition: InterfaceDefinition, _ what: String
  ) {
    guard let sample = Samples.value(of: type) else {
      return XCTFail("\(what): no sample of \(type) in Samples")
    }
    let names = members.map(\.name)
    XCTAssertEqual(Self.fieldNames(of: sample), names, "\(what): \(type)'s fields and the IDL")
    XCTAssertEqual(Self.keys(sample.json), names, "\(what): \(type)'s JSON and the IDL")
    XCTAssertEqual(definition.problems(sample.json, members: members, at: what), [])
    XCTAssertTrue(Self.readsBack(sample), "\(what): \(type) does not read back its own JSON")
  }

  private static func types<Method: VarlinkMethod>(of method: Method.Type) -> (
    parameters: any JSONRepresentable.Type, reply: any JSONRepresentable.Type
  ) {
    (Method.Parameters.self, Method.Reply.self)
  }

  private static func readsBack<Value: JSONRepresentable>(_ value: Value) -> Bool {
    (try? Value(json: value.json)) == value
  }

  private static func keys(_ value: JSONValue) -> [String] {
    value.objectValue?.map(\.key) ?? []
  }

  /// The stored properties of a struct, or the associated values of an enum case, spelled as
  /// the wire spells them.
  private static func fieldNames(of value: Any) -> [String] {
    let mirror = Mirror(reflecting: value)
    if mirror.displayStyle == .enum, let payload = mirror.children.first?.value {
      return Mirror(reflecting: payload).children.compactMap { $0.label?.snakeCased }
    }
    return mirror.children.compactMap { $0.label?.snakeCased }
  }

  private static func associatedValueCount(of error: DaemonError) -> Int {
    guard let payload = Mirror(reflecting: error).children.first?.value else { return 0 }
    let mirror = Mirror(reflecting: payload)
    return mirror.displayStyle == .tuple ? mirror.children.count : 1
  }
}
