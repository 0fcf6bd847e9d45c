import JSON
import LinkCore

/// What the inbound receipts' journal (`mqtt-qos2.jsonl`) holds, replayed from its bytes, and
/// the lines and compacted image it is written with. Replaying reads nothing but the bytes it
/// is given, so torn and corrupt journals are tested without a disk; `ReceiptJournal` does
/// the file's part.
///
/// The journal is JSON lines, one per `ReceiptJournalEntry`:
/// ```
/// {"op":"received","id":9,"seq":120}    delivery 9 is pending, its record is seq 120
/// {"op":"released","id":9,"seq":120}    its record 120 (and any earlier record of 9) is released
/// {"op":"forgotten","through":130}      every delivery with a record up to 130 is void
/// {"op":"watermark","seq":4096}         every pending delivery with a record up to 4096 is above
/// ```
/// The store's records are the rest of the truth: a QoS 2 record carries its packet id in
/// `meta`, so the deliveries pending at start are the `received` ones plus the records after
/// the watermark, less what was released or forgotten. A torn last line was never fsynced,
/// so it gated nothing: it is cut off. A corrupt line is counted and skipped, and no watermark
/// after it is trusted (the line may have been one of the `received` it vouches for): the
/// store is then read from the last watermark before it.
struct ReceiptLog: Sendable {
  /// The record of each delivery the `received` lines say is pending (the latest, by seq).
  private(set) var received: [UInt16: UInt64] = [:]
  /// The latest released record of each delivery, where it still matters (above the
  /// watermark: a `received` below it was dropped when the release was applied).
  private(set) var releases: [UInt16: UInt64] = [:]
  /// Every delivery with a record up to this seq is void.
  private(set) var forgottenThrough: UInt64 = 0
  /// Every pending delivery with a record up to this seq is in `received`.
  private(set) var watermark: UInt64 = 0
  /// Lines that did not parse (logged and skipped).
  private(set) var corruptLines = 0
  /// The length of the journal's complete lines: what follows was torn by a crash.
  private(set) var wholeLinesLength = 0

  /// An empty journal.
  init() {}

  /// Replays a journal.
  init(replaying data: [UInt8]) {
    data.withUnsafeBytes { raw in
      var offset = 0
      while offset < raw.count {
        guard let newline = raw[offset...].firstIndex(of: 0x0A) else { break }  // torn tail
        let line = UnsafeRawBufferPointer(rebasing: raw[offset..<newline])
        if let entry = Self.entry(line) {
          apply(entry)
        } else {
          corruptLines += 1
        }
        offset = newline + 1
        wholeLinesLength = offset
      }
    }
  }

  /// Applies one entry, as replaying its line would.
  mutating func apply(_ entry: ReceiptJournalEntry) {
    switch entry {
    case .received(let id, let seq):
      received[id] = max(received[id] ?? 0, seq)
    case .released(let id, let seq):
      if let pending = received[id], pending <= seq { received[id] = nil }
      // At or below the watermark only `received` counts, and this was applied to it.
      if seq > watermark { releases[id] = max(releases[id] ?? 0, seq) }
    case .forgotten(let through):
      received = received.filter { $0.value > through }
      forgottenThrough = max(forgottenThrough, through)
    case .watermark(let seq):
      // A corrupt line before it may have been one of the deliveries it vouches for.
      guard corruptLines == 0, seq > watermark else { return }
      watermark = seq
      // Below it only `received` counts, and releases and forgetting were applied to those.
      releases = releases.filter { $0.value > seq }
    }
  }

  /// The deliveries pending: those `received`, and `records` (the store's QoS 2 records after
  /// the watermark, as delivery id and seq), less what was released or forgotten.
  func pending(adding records: [(id: UInt16, seq: UInt64)]) -> [UInt16: UInt64] {
    var pending = received
    for record in records where record.seq > (pending[record.id] ?? 0) {
      pending[record.id] = record.seq
    }
    return pending.filter { id, seq in
      seq > forgottenThrough && seq > (releases[id] ?? 0)
    }
  }

  /// The journal rewritten with what it still says: the pending `received`, the releases and
  /// the forgetting above the watermark, and the watermark.
  func compactionImage() -> [UInt8] {
    var image: [UInt8] = []
    for (id, seq) in received.sorted(by: { $0.value < $1.value }) {
      Self.append(.received(id: id, seq: seq), to: &image)
    }
    for (id, seq) in releases.sorted(by: { $0.value < $1.value }) {
      Self.append(.released(id: id, seq: seq), to: &image)
    }
    if forgottenThrough > watermark {
      Self.append(.forgotten(through: forgottenThrough), to: &image)
    }
    if watermark > 0 { Self.append(.watermark(watermark), to: &image) }
    return image
  }

  /// Appends the line of `entry`.
  static func append(_ entry: ReceiptJournalEntry, to out: inout [UInt8]) {
    switch entry {
    case .received(let id, let seq): appendLine("received", id: id, seq: seq, to: &out)
    case .released(let id, let seq): appendLine("released", id: id, seq: seq, to: &out)
    case .forgotten(let through):
      out.append(#"{"op":"forgotten","through":"# as StaticString)
      out.appendDecimal(through)
      out.append("}\n" as StaticString)
    case .watermark(let seq):
      out.append(#"{"op":"watermark","seq":"# as StaticString)
      out.appendDecimal(seq)
      out.append("}\n" as StaticString)
    }
  }

  private static func appendLine(
    _ op: StaticString, id: UInt16, seq: UInt64, to out: inout [UInt8]
  ) {
    out.append(#"{"op":""# as StaticString)
    out.append(op)
    out.append(#"","id":"# as StaticString)
    out.appendDecimal(UInt64(id))
    out.append(#","seq":"# as StaticString)
    out.appendDecimal(seq)
    out.append("}\n" as StaticString)
  }

  /// The entry a line holds, or nil for a line that is not one. The journal is only ever
  /// written by `append(_:to:)`, so a line is read as exactly that: anything else is corrupt.
  /// (A scan of each line as JSON made a start with a long journal slow.)
  static func entry(_ line: UnsafeRawBufferPointer) -> ReceiptJournalEntry? {
    if var r = LineReader(line, after: #"{"op":"received","id":"#), let id = r.id(),
      r.skip(#","seq":"#), let seq = r.number(), r.closed()
    {
      return .received(id: id, seq: seq)
    }
    if var r = LineReader(line, after: #"{"op":"released","id":"#), let id = r.id(),
      r.skip(#","seq":"#), let seq = r.number(), r.closed()
    {
      return .released(id: id, seq: seq)
    }
    if var r = LineReader(line, after: #"{"op":"forgotten","through":"#), let through = r.number(),
      r.closed()
    {
      return .forgotten(through: through)
    }
    if var r = LineReader(line, after: #"{"op":"watermark","seq":"#), let seq = r.number(),
      r.closed()
    {
      return .watermark(seq)
    }
    return nil
  }
}

/// Reads one journal line from the front: fixed text and decimal numbers.
private struct LineReader {
  private let line: UnsafeRawBufferPointer
  private var index = 0

  /// A reader after `prefix`, or nil when the line does not start with it.
  init?(_ line: UnsafeRawBufferPointer, after prefix: StaticString) {
    self.line = line
    guard skip(prefix) else { return nil }
  }

  /// Consumes `text` if the line goes on with it.
  mutating func skip(_ text: StaticString) -> Bool {
    let count = text.utf8CodeUnitCount
    guard line.count - index >= count else { return false }
    for i in 0..<count where line[index + i] != text.utf8Start[i] { return false }
    index += count
    return true
  }

  /// Consumes the closing brace, which must end the line.
  mutating func closed() -> Bool {
    skip("}") && index == line.count
  }

  /// Consumes a decimal number (no sign, no leading zero) that fits UInt64.
  mutating func number() -> UInt64? {
    let start = index
    var value: UInt64 = 0
    while index < line.count, line[index] >= 0x30, line[index] <= 0x39 {
      let (times, o1) = value.multipliedReportingOverflow(by: 10)
      let (sum, o2) = times.addingReportingOverflow(UInt64(line[index] - 0x30))
      guard !o1, !o2 else { return nil }
      value = sum
      index += 1
    }
    guard index > start, line[start] != 0x30 || index == start + 1 else { return nil }
    return value
  }

  /// Consumes a delivery id: a number that fits 16 bits.
  mutating func id() -> UInt16? {
    number().flatMap { UInt16(exactly: $0) }
  }
}
