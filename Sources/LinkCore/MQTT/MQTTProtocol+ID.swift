import JSON

/// A message's id from its MQTT 5 properties (`[MQTT] IDProperty=`): what publishers set to
/// say that two messages are one, so the store keeps it once.
extension MQTTProtocol {
  /// The `[MQTT] IDProperty=` value that names the Correlation Data property rather than a
  /// user property (a user property of that name cannot be used as the id).
  public static let correlationDataID = "correlation-data"

  /// The longest property value taken as an id, in bytes. MQTT allows 65,535; a longer value
  /// is no id (the message is stored as one without), since every id is kept in the record,
  /// and the room's newest one in memory.
  public static let maximumIDLength = 1024

  /// The id `properties` carry under `name` (a user property's name, or
  /// `correlationDataID`), or nil when they carry none there, or an empty or overlong one.
  /// Of a user property given more than once the first counts. Correlation Data is binary:
  /// its bytes are the id when they are UTF-8 text without control characters, and
  /// otherwise their lowercase hex digits.
  public static func messageID(_ properties: MQTTProperties, named name: String) -> [UInt8]? {
    if name == correlationDataID {
      guard let data = properties.correlationData, !data.isEmpty, data.count <= maximumIDLength
      else { return nil }
      return isPlainText(data) ? data : hex(data)
    }
    guard let property = properties.userProperties.first(where: { $0.name == name }) else {
      return nil
    }
    let count = property.value.utf8.count
    guard count > 0, count <= maximumIDLength else { return nil }
    return Array(property.value.utf8)
  }

  /// Whether `bytes` are UTF-8 with no control character (C0 or DEL): text as a publisher
  /// writes an id, not binary data that happens to decode.
  static func isPlainText(_ bytes: [UInt8]) -> Bool {
    !bytes.contains(where: { $0 < 0x20 || $0 == 0x7F }) && UTF8Validator.isValid(bytes)
  }

  /// `bytes` as lowercase hex digits.
  static func hex(_ bytes: [UInt8]) -> [UInt8] {
    let digits = Array("0123456789abcdef".utf8)
    var out: [UInt8] = []
    out.reserveCapacity(bytes.count * 2)
    for byte in bytes {
      out.append(digits[Int(byte >> 4)])
      out.append(digits[Int(byte & 0x0F)])
    }
    return out
  }
}
