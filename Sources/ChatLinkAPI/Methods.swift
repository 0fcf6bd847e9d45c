import JSON
import Varlink

/// A method of a Varlink interface, with the types of its parameters and its reply: the
/// client encodes the one and decodes the other, the daemon the other way round.
public protocol VarlinkMethod {
  /// The parameters object.
  associatedtype Parameters: JSONRepresentable
  /// The reply's parameters object (each reply's, for a streaming method).
  associatedtype Reply: JSONRepresentable
  /// The interface, e.g. "io.chatlink.Daemon".
  static var interface: String { get }
  /// The method's own name, e.g. "Send".
  static var name: String { get }
}

extension VarlinkMethod {
  /// The name a call carries: "io.chatlink.Daemon.Send".
  public static var qualifiedName: String { interface + "." + name }
}

/// A method of io.chatlink.Daemon.
public protocol DaemonMethod: VarlinkMethod {}

extension DaemonMethod {
  /// io.chatlink.Daemon.
  public static var interface: String { ChatLinkInterface.name }
}

/// `GetStatus() -> (status: Status)`.
public enum GetStatusMethod: DaemonMethod {
  public typealias Parameters = EmptyObject
  public typealias Reply = GetStatusReply
  public static let name = "GetStatus"
}

/// `Send(room: ?string, text: string, id: ?string) -> (id: string, state: string, count: int)`:
/// answers once the message is durable; with "more", again when sent and confirmed.
public enum SendMethod: DaemonMethod {
  public typealias Parameters = SendParameters
  public typealias Reply = SendReceipt
  public static let name = "Send"
}

/// `SendBatch(room: ?string, texts: []string) -> (ids: []string, count: int, state: string)`:
/// all or none, one reply once all are durable.
public enum SendBatchMethod: DaemonMethod {
  public typealias Parameters = SendBatchParameters
  public typealias Reply = SendBatchReceipt
  public static let name = "SendBatch"
}

/// `Join(room: string) -> ()`.
public enum JoinMethod: DaemonMethod {
  public typealias Parameters = RoomParameters
  public typealias Reply = EmptyObject
  public static let name = "Join"
}

/// `Leave(room: string) -> ()`.
public enum LeaveMethod: DaemonMethod {
  public typealias Parameters = RoomParameters
  public typealias Reply = EmptyObject
  public static let name = "Leave"
}

/// `ListRooms() -> (rooms: []string)`.
public enum ListRoomsMethod: DaemonMethod {
  public typealias Parameters = EmptyObject
  public typealias Reply = ListRoomsReply
  public static let name = "ListRooms"
}

/// `History(room: ?string, since_seq: ?int, since_time: ?string, limit: ?int) -> (records:
/// []object)`.
public enum HistoryMethod: DaemonMethod {
  public typealias Parameters = HistoryParameters
  public typealias Reply = HistoryReply
  public static let name = "History"
}

/// `Subscribe(room: ?string) -> (event: Event)`, called with "more": a stream of events.
public enum SubscribeMethod: DaemonMethod {
  public typealias Parameters = SubscribeParameters
  public typealias Reply = SubscribeReply
  public static let name = "Subscribe"
}

/// `Reconnect() -> ()`.
public enum ReconnectMethod: DaemonMethod {
  public typealias Parameters = EmptyObject
  public typealias Reply = EmptyObject
  public static let name = "Reconnect"
}

/// `Ping() -> (rtt_ms: float)`.
public enum PingMethod: DaemonMethod {
  public typealias Parameters = EmptyObject
  public typealias Reply = PingReply
  public static let name = "Ping"
}

/// `GetMetrics(format: ?string) -> (text: string)`: the daemon's metrics as OpenMetrics
/// text, or in Prometheus' classic text format.
public enum GetMetricsMethod: DaemonMethod {
  public typealias Parameters = GetMetricsParameters
  public typealias Reply = GetMetricsReply
  public static let name = "GetMetrics"
}

// MARK: org.varlink.service

/// A method of org.varlink.service, which every Varlink service carries.
public protocol ServiceMethod: VarlinkMethod {}

extension ServiceMethod {
  /// org.varlink.service.
  public static var interface: String { "org.varlink.service" }
}

/// `GetInfo() -> (vendor, product, version, url, interfaces)`.
public enum GetInfoMethod: ServiceMethod {
  public typealias Parameters = EmptyObject
  public typealias Reply = ServiceInfo
  public static let name = "GetInfo"
}

/// `GetInterfaceDescription(interface: string) -> (description: string)`.
public enum GetInterfaceDescriptionMethod: ServiceMethod {
  public typealias Parameters = InterfaceName
  public typealias Reply = InterfaceDescription
  public static let name = "GetInterfaceDescription"
}

/// GetInfo's reply: who serves the socket, and which interfaces.
public struct ServiceInfo: JSONRepresentable {
  /// The vendor, "ChatLink".
  public var vendor: String
  /// The product, "chatlinkd".
  public var product: String
  /// The release.
  public var version: String
  /// Where to read about it.
  public var url: String
  /// The interfaces served.
  public var interfaces: [String]

  /// Creates the reply.
  public init(vendor: String, product: String, version: String, url: String, interfaces: [String]) {
    self.vendor = vendor
    self.product = product
    self.version = version
    self.url = url
    self.interfaces = interfaces
  }

  public init(json: JSONValue) throws(APIDecodingError) {
    let object = try ObjectReader(json)
    vendor = try object.string("vendor")
    product = try object.string("product")
    version = try object.string("version")
    url = try object.string("url")
    interfaces = try object.strings("interfaces")
  }

  public var json: JSONValue {
    .object([
      ("vendor", .string(vendor)), ("product", .string(product)), ("version", .string(version)),
      ("url", .string(url)), ("interfaces", .array(interfaces.map(JSONValue.string))),
    ])
  }
}

/// GetInterfaceDescription's parameters: `(interface: string)`.
public struct InterfaceName: JSONRepresentable {
  /// The interface, e.g. "io.chatlink.Daemon".
  public var interface: String

  /// Creates the parameters.
  public init(interface: String) {
    self.interface = interface
  }

  public init(json: JSONValue) throws(APIDecodingError) {
    interface = try ObjectReader(json).string("interface")
  }

  public var json: JSONValue { .object([("interface", .string(interface))]) }
}

/// GetInterfaceDescription's reply: `(description: string)`.
public struct InterfaceDescription: JSONRepresentable {
  /// The interface's text in Varlink's interface definition language.
  public var description: String

  /// Creates the reply.
  public init(description: String) {
    self.description = description
  }

  public init(json: JSONValue) throws(APIDecodingError) {
    description = try ObjectReader(json).string("description")
  }

  public var json: JSONValue { .object([("description", .string(description))]) }
}
