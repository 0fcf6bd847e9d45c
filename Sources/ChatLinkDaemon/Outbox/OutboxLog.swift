import JSON
import LinkCore

/// What the outbox log (`outbox.jsonl`) holds, replayed from its bytes at start-up.
///
/// The log is JSON lines: `add` (an accepted message with its count), `batch` (messages
/// accepted together: their room, time and first count once, their ids and texts as arrays;
/// the `i`th has the first count plus `i`), `released` (by client id: the backend holds the
/// message and our release of it is durable, MQTT QoS 2: it is never sent again, only its
/// release), `ack` (a confirmed one,
/// by client id; or, with `through`, every entry up to that count, as one pong confirms a whole
/// burst) and `counter` (written first by a compaction, so counts stay monotonic after
/// every acknowledged `add` is gone). Replaying reads nothing but the bytes it is given, so
/// torn and corrupt logs can be tested without a disk; the outbox does the file's part.
struct OutboxLog {
  /// Entries added and not acknowledged, in count order (the order they go out in). When an
  /// id was added twice without an ack between, the later add stands.
  var pending: [OutboxEntry] { byID.values.sorted { $0.count < $1.count } }
  /// The count for the next entry: above every count the log has used.
  var nextCount: UInt64 { maxCount + 1 }
  /// Lines that did not parse (logged and skipped).
  private(set) var corruptLines = 0
  /// The length of the log's complete lines. A last line without its newline was torn by a
  /// crash during the write, so the message was never acknowledged: the outbox cuts it off.
  private(set) var wholeLinesLength = 0

  private var byID: [String: OutboxEntry] = [:]
  private var maxCount: UInt64 = 0

  /// The fields a line may have, in the order the scanner reports them.
  private enum Key: Int, CaseIterable {
    case op, id, room, count, time, text, through
  }
  private static let keys = JSONScanner.Keys(Key.allCases.map { "\($0)" })
  /// The fields of a `batch` line (a scan reports at most eight, so these are a second scan's).
  fileprivate enum BatchKey: Int, CaseIterable {
    case room, count, time, ids, texts
  }
  private static let batchKeys = JSONScanner.Keys(BatchKey.allCases.map { "\($0)" })

  /// Replays a log; an `add` without a time gets the present one.
  init(replaying data: [UInt8]) {
    data.withUnsafeBytes { raw in
      var offset = 0
      while offset < raw.count {
        guard let newline = raw[offset...].firstIndex(of: 0x0A) else { break }  // torn tail
        apply(UnsafeRawBufferPointer(rebasing: raw[offset..<newline]))
        offset = newline + 1
        wholeLinesLength = offset
      }
    }
  }

  private mutating func apply(_ line: UnsafeRawBufferPointer) {
    guard let scan = JSONScanner.scan(line, topLevel: Self.keys) else {
      corruptLines += 1
      return
    }
    let fields = Fields<Key>(line: [UInt8](line), ranges: scan.topLevel)
    switch fields.string(.op) {
    case "add":
      guard let id = fields.string(.id), let text = fields.string(.text),
        let count = fields.number(.count)
      else {
        corruptLines += 1
        return
      }
      let created = fields.string(.time).flatMap { Timestamp(rfc3339: $0) } ?? .now()
      byID[id] = OutboxEntry(
        id: id, room: fields.room(.room), text: text, count: count, created: created)
      maxCount = max(maxCount, count)
    case "batch":
      guard let batchScan = JSONScanner.scan(line, topLevel: Self.batchKeys),
        let batch = Fields<BatchKey>(line: [UInt8](line), ranges: batchScan.topLevel).batch()
      else {
        corruptLines += 1
        return
      }
      for entry in batch { byID[entry.id] = entry }
      maxCount = max(maxCount, batch[batch.count - 1].count)
    case "released":
      // An entry acknowledged meanwhile has nothing left to release.
      guard let id = fields.string(.id) else {
        corruptLines += 1
        return
      }
      byID[id]?.released = true
    case "ack":
      if let id = fields.string(.id) {
        byID[id] = nil
      } else if let through = fields.number(.through) {
        // Every entry added before this line with a count up to `through`: later adds all
        // have higher counts.
        byID = byID.filter { $0.value.count > through }
      } else {
        corruptLines += 1
      }
    case "counter":
      // The count the next entry gets; a line without one, or with 0, says nothing.
      guard let next = fields.number(.count) else {
        corruptLines += 1
        return
      }
      if next > 0 { maxCount = max(maxCount, next - 1) }
    default:
      corruptLines += 1
    }
  }

  /// One line's values, by key; it keeps a copy of the line (replaying is start-up work only).
  fileprivate struct Fields<Name: RawRepresentable<Int>> {
    let line: [UInt8]
    let ranges: JSONScanner.FieldRanges

    func string(_ key: Name) -> String? {
      guard let range = ranges[key.rawValue], range.count >= 2, line[range.lowerBound] == 0x22
      else {
        return nil
      }
      let content = line[(range.lowerBound + 1)..<(range.upperBound - 1)]
      return String(decoding: content.withUnsafeBytes { JSONString.unescape($0) }, as: UTF8.self)
    }

    func number(_ key: Name) -> UInt64? {
      guard let range = ranges[key.rawValue] else { return nil }
      return UInt64(String(decoding: line[range], as: UTF8.self))
    }

    /// An array of strings.
    func strings(_ key: Name) -> PackedStrings? {
      guard let range = ranges[key.rawValue] else { return nil }
      let array = line[range].withUnsafeBytes { PackedStrings.readJSONArray($0) }
      guard case .strings(let strings) = array else { return nil }
      return strings
    }

    /// The room: nil for JSON null (raw mode) and for a value that is no room.
    func room(_ key: Name) -> RoomID? {
      ranges[key.rawValue].flatMap { range -> RoomID? in
        line[range].withUnsafeBytes { value in
          value.first == UInt8(ascii: "n") ? nil : RoomID(json: value)
        }
      }
    }
  }
}

extension OutboxLog.Fields where Name == OutboxLog.BatchKey {
  /// The entries of a `batch` line, or nil if it is not one: arrays of ids and of texts, strings
  /// all, of one length (at least one), and counts that fit.
  func batch() -> [OutboxEntry]? {
    guard let first = number(.count), let ids = strings(.ids), let texts = strings(.texts),
      !ids.isEmpty, ids.count == texts.count,
      !first.addingReportingOverflow(UInt64(ids.count - 1)).overflow
    else { return nil }
    let created = string(.time).flatMap { Timestamp(rfc3339: $0) } ?? .now()
    return OutboxEntry.batch(
      room: room(.room), texts: texts, ids: ids.map { ClientID.given($0) }, firstCount: first,
      created: created)
  }
}
