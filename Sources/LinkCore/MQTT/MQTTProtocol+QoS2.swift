import JSON
import WebSocket

/// QoS 2 and what the broker grants: the steps of a send after its PUBLISH, a QoS 2 record's
/// packet id read back from the store, and subscriptions granted less than asked.
extension MQTTProtocol {
  /// A PUBREC: the broker holds our message and waits for its PUBREL (which the core sends
  /// once the outbox holds the entry as released), or (MQTT 5, a reason code from 0x80)
  /// refused it.
  mutating func receivedByBroker(_ id: UInt16, _ code: UInt8, into reading: inout ProtocolReading) {
    guard let count = awaitedPublishes[id] else {
      reading.problem = "a PUBREC for packet id \(id), which is not in flight"
      return
    }
    guard code < 0x80 else {
      awaitedPublishes[id] = nil
      reading.failed.append(DeliveryFailure(count: count, reason: Self.reason(code, nil)))
      return
    }
    reading.awaitingRelease.append(count)
  }

  /// A PUBCOMP: the broker has our message for good. One with a reason code (MQTT 5: the
  /// broker no longer knew the id) still ends the exchange: publishing the message again
  /// could deliver it twice.
  mutating func completed(_ id: UInt16, _ code: UInt8, into reading: inout ProtocolReading) {
    guard let count = awaitedPublishes.removeValue(forKey: id) else {
      reading.problem = "a PUBCOMP for packet id \(id), which is not in flight"
      return
    }
    reading.delivered.append(count)
    if code >= 0x80 {
      reading.problem =
        "the broker completed packet id \(id) with '\(Self.reason(code, nil))'; "
        + "it may have lost the message"
    }
  }

  /// A SUBACK's grant: a QoS below the one asked (RabbitMQ grants 1 for 2) is logged once per
  /// filter and shown in status.
  mutating func granted(_ qos: UInt8, for filter: String, into reading: inout ProtocolReading) {
    guard qos < settings.qos else {
      grantedLess[filter] = nil
      return
    }
    grantedLess[filter] = qos
    guard grantsNoticed.insert(filter).inserted else { return }
    reading.notice = .grantedLess(filter: filter, asked: settings.qos, granted: qos)
  }

  /// "QoS 2 asked, broker granted 1 for chat/7, chat/8", or nil when every grant is as asked.
  var grantNote: String? {
    guard !grantedLess.isEmpty else { return nil }
    let byGrant = Dictionary(grouping: grantedLess.keys, by: { grantedLess[$0] ?? 0 })
    return byGrant.keys.sorted(by: >).map { grant in
      "QoS \(settings.qos) asked, broker granted \(grant) for "
        + (byGrant[grant] ?? []).sorted().joined(separator: ", ")
    }.joined(separator: "; ")
  }

  /// The keys a stored record's `meta` is read with.
  private static let metaKeys = JSONScanner.Keys(["qos", "packet_id"])

  /// The packet id of a QoS 2 delivery whose record's `meta` (as `meta(_:packetID:)` wrote
  /// it) says it was stored, or nil for any other record.
  public static func twoStepDelivery(meta: UnsafeRawBufferPointer) -> UInt16? {
    guard let scan = JSONScanner.scan(meta, topLevel: metaKeys),
      let qos = scan.topLevel[0], let id = scan.topLevel[1],
      String(decoding: UnsafeRawBufferPointer(rebasing: meta[qos]), as: UTF8.self) == "2"
    else { return nil }
    return UInt16(String(decoding: UnsafeRawBufferPointer(rebasing: meta[id]), as: UTF8.self))
  }
}
