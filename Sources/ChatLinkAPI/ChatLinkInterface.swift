/// The io.chatlink.Daemon interface, in Varlink's interface definition language.
///
/// The daemon serves this text from org.varlink.service.GetInterfaceDescription. The Swift
/// types of this target are the same contract typed (`DaemonMethod`, `DaemonStatus`,
/// `DaemonEvent`, `DaemonError`, …); a unit test reads this text and fails when the two
/// disagree, so a field added to one must be added to the other. (Tests/Fuzz/make_seed_corpus.py
/// reads the text from this file too: keep it in the `description` literal.)
public enum ChatLinkInterface {
  /// The interface name.
  public static let name = "io.chatlink.Daemon"

  /// The interface description.
  public static let description = """
    # The ChatLink daemon: one persistent WebSocket connection to a chat backend, a durable
    # JSON-lines message store and a durable outbox.
    interface io.chatlink.Daemon

    # The daemon's state, as chatlinkctl status shows it.
    type Status (
      # idle, connecting, tls, upgrading, open, closing or waiting.
      state: string,
      # The human status line (also systemd's STATUS=).
      text: string,
      # The instance (chatlinkd@NAME), unless this is the plain chatlinkd.service.
      instance: ?string,
      # The backend URL, without credentials.
      url: string,
      # envelope, raw, socketio, mqtt or stomp.
      protocol: string,
      rooms: []string,
      subprotocol: ?string,
      extensions: ?string,
      # The backend protocol's own session while connected: Socket.IO's sid and namespace.
      session: ?string,
      namespace: ?string,
      # What that session falls short of (MQTT: "QoS 2 asked, broker granted 1 for chat/7").
      session_note: ?string,
      # Seconds until the next connection attempt, while waiting.
      retry_in: ?float,
      last_error: ?string,
      # The last message the backend refused: "<id>: <reason>".
      last_failure: ?string,
      store_error: ?string,
      received: int,
      # Inbound messages whose ids the store already had: dropped, not stored twice.
      duplicates_dropped: ?int,
      # Times the backend's history no longer reached back to the newest stored id.
      history_gaps: ?int,
      # What the link promises of inbound messages now, in words.
      delivery: ?string,
      # The rooms catching up from the backend's history now (XMPP's archives).
      catching_up: ?[]CatchUp,
      sent: int,
      confirmed: int,
      # Messages the backend refused; they left the outbox.
      failed: int,
      connects: int,
      outbox: int,
      last_seq: int,
      durable_seq: int,
      store_path: string,
      version: string
    )

    # A room catching up: the messages its history has brought so far on this connection.
    type CatchUp (
      room: string,
      caught_up: int
    )

    # Something that happened, streamed by Subscribe.
    type Event (
      # connected, disconnected, message, sent, confirmed, failed, error or status.
      event: string,
      time: string,
      # message: the stored record (the JSON object of its line in messages.jsonl).
      record: ?object,
      # message: the backend's event name (Socket.IO).
      name: ?string,
      # sent, confirmed, failed: the client id and room.
      id: ?string,
      room: ?string,
      # connected: what the server agreed to.
      subprotocol: ?string,
      extensions: ?string,
      # disconnected: the close code and reason, or the transport error; failed: why the
      # backend refused the message.
      code: ?int,
      reason: ?string,
      # status: the new status line; error: what went wrong.
      text: ?string
    )

    method GetStatus() -> (status: Status)

    # Queues a message durably in the outbox; replies once it is durable (state "queued").
    # With "more", further replies follow with state "sent" and "confirmed", or the error
    # DeliveryFailed when the backend refuses the message.
    method Send(room: ?string, text: string, id: ?string) -> (id: string, state: string, count: int)

    # Queues 1 to 10000 messages for one room, in order, all or none; replies once all are
    # durable. ids[i] is texts[i]'s client id and its count is count + i; state is "queued".
    # With wait_for_room, a full outbox holds the call until it has room (waiting calls are
    # taken in order) instead of failing it with OutboxFull.
    method SendBatch(room: ?string, texts: []string, wait_for_room: ?bool) -> (ids: []string, count: int, state: string)

    method Join(room: string) -> ()
    method Leave(room: string) -> ()
    method ListRooms() -> (rooms: []string)

    # Stored messages, newest last: each the JSON object of its line in messages.jsonl.
    # since_seq and since_time are exclusive lower bounds; limit defaults to 100.
    method History(room: ?string, since_seq: ?int, since_time: ?string, limit: ?int) -> (records: []object)

    # With "more": a stream of events, optionally only those of one room.
    method Subscribe(room: ?string) -> (event: Event)

    method Reconnect() -> ()

    # A round trip to the backend.
    method Ping() -> (rtt_ms: float)

    # The daemon's metrics (what [Metrics] Listen= serves over HTTP): format "openmetrics"
    # (the default: OpenMetrics 1.0 text, ending in "# EOF") or "prometheus" (the classic text
    # format 0.0.4, which promtool check metrics reads).
    method GetMetrics(format: ?string) -> (text: string)

    error NotConnected (state: string)
    error OutboxFull (limit: int)
    error StorageFailed (reason: string)
    error InvalidParameter (parameter: string, reason: string)
    # The backend refused the message (it left the outbox).
    error DeliveryFailed (id: string, reason: string)
    """

  /// The org.varlink.service interface, as every Varlink service carries it.
  public static let serviceDescription = """
    # The Varlink service interface.
    interface org.varlink.service

    method GetInfo() -> (
      vendor: string,
      product: string,
      version: string,
      url: string,
      interfaces: []string
    )

    method GetInterfaceDescription(interface: string) -> (description: string)

    error InterfaceNotFound (interface: string)
    error MethodNotFound (method: string)
    error MethodNotImplemented (method: string)
    error InvalidParameter (parameter: string)
    error PermissionDenied ()
    """

  /// The description of each interface the daemon serves, by interface name.
  public static let descriptions = [
    "org.varlink.service": serviceDescription,
    name: description,
  ]

  /// Every method of io.chatlink.Daemon.
  public static var methods: [any DaemonMethod.Type] {
    [
      GetStatusMethod.self, SendMethod.self, SendBatchMethod.self, JoinMethod.self,
      LeaveMethod.self, ListRoomsMethod.self, HistoryMethod.self, SubscribeMethod.self,
      ReconnectMethod.self, PingMethod.self, GetMetricsMethod.self,
    ]
  }

  /// Our error names.
  public enum Errors {
    /// `NotConnected (state: string)`.
    public static let notConnected = "io.chatlink.Daemon.NotConnected"
    /// `OutboxFull (limit: int)`.
    public static let outboxFull = "io.chatlink.Daemon.OutboxFull"
    /// `StorageFailed (reason: string)`.
    public static let storageFailed = "io.chatlink.Daemon.StorageFailed"
    /// `InvalidParameter (parameter: string, reason: string)`.
    public static let invalidParameter = "io.chatlink.Daemon.InvalidParameter"
    /// `DeliveryFailed (id: string, reason: string)`.
    public static let deliveryFailed = "io.chatlink.Daemon.DeliveryFailed"
  }
}
