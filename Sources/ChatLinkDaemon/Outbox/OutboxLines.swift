import JSON
import LinkCore

/// The lines of the outbox log (`outbox.jsonl`) that carry messages, and the image a
/// compaction rewrites the log with. `OutboxLog` reads them back.
///
/// A message accepted alone is an `add` line; messages accepted together (a `SendBatch`) are
/// one `batch` line, which writes their room, time and first count once and their ids and
/// texts as two arrays. The streamed send's durability is an fsync of these lines, and its
/// time grows with their bytes: the batch line holds about half as many as an `add` line per
/// message. It is also all or none, as the `SendBatch` is: a line torn by a crash was never
/// acknowledged, and replay drops it whole.
enum OutboxLines {
  /// What the entries accepted together share, formatted once: the room (JSON) and the time.
  struct Pieces {
    var room: [UInt8]
    var time: [UInt8]
  }

  /// The pieces for entries of this room accepted at this time.
  static func pieces(
    room: RoomID?, created: Timestamp, formatter: inout TimestampFormatter
  ) -> Pieces {
    var time: [UInt8] = []
    formatter.append(created, to: &time)
    return Pieces(room: room?.json ?? Array("null".utf8), time: time)
  }

  /// Appends the lines of `entries`, accepted together (one room and time, consecutive
  /// counts): an `add` line for one entry, a `batch` line for several.
  static func appendAccepted(
    _ entries: some RandomAccessCollection<OutboxEntry>, _ pieces: Pieces, to out: inout [UInt8]
  ) {
    guard let first = entries.first else { return }
    if entries.count == 1 {
      appendAdd(first, pieces, to: &out)
    } else {
      appendBatch(entries, pieces, to: &out)
    }
  }

  /// `{"op":"add","id":I,"room":R,"count":C,"time":T,"text":X}`.
  private static func appendAdd(_ entry: OutboxEntry, _ pieces: Pieces, to out: inout [UInt8]) {
    out.append(#"{"op":"add","id":"# as StaticString)
    entry.clientID.appendJSON(to: &out)
    out.append(#","room":"# as StaticString)
    out += pieces.room
    out.append(#","count":"# as StaticString)
    out.appendDecimal(entry.count)
    out.append(#","time":""# as StaticString)
    out += pieces.time
    out.append(#"","text":"# as StaticString)
    appendText(entry, to: &out)
    out.append("}\n" as StaticString)
  }

  /// `{"op":"batch","room":R,"count":C,"time":T,"ids":[I…],"texts":[X…]}`: entry `i` has count
  /// `C + i`.
  private static func appendBatch(
    _ entries: some RandomAccessCollection<OutboxEntry>, _ pieces: Pieces, to out: inout [UInt8]
  ) {
    guard let first = entries.first else { return }
    out.append(#"{"op":"batch","room":"# as StaticString)
    out += pieces.room
    out.append(#","count":"# as StaticString)
    out.appendDecimal(first.count)
    out.append(#","time":""# as StaticString)
    out += pieces.time
    out.append(#"","ids":["# as StaticString)
    // When no id or text needs escapes (nearly always), the arrays are written in one piece
    // into room sized beforehand, not appended message by message.
    var size = 16
    var plain = true
    for index in entries.indices {
      let entry = entries[index]
      plain = plain && entry.isPlain
      size += entry.clientID.utf8Count + entry.textUTF8Count + 6
    }
    if plain {
      out.append(maxCount: size) { line in
        var separator = false
        for index in entries.indices {
          if separator { line.write(UInt8(ascii: ",")) }
          separator = true
          entries[index].clientID.withUTF8 { line.writeQuoted(UnsafeRawBufferPointer($0)) }
        }
        line.write(#"],"texts":["#)
        separator = false
        for index in entries.indices {
          if separator { line.write(UInt8(ascii: ",")) }
          separator = true
          entries[index].withTextUTF8 { line.writeQuoted(UnsafeRawBufferPointer($0)) }
        }
        line.write("]}\n")
      }
      return
    }
    var separator = false
    for index in entries.indices {
      if separator { out.append(UInt8(ascii: ",")) }
      separator = true
      entries[index].clientID.appendJSON(to: &out)
    }
    out.append(#"],"texts":["# as StaticString)
    separator = false
    for index in entries.indices {
      if separator { out.append(UInt8(ascii: ",")) }
      separator = true
      appendText(entries[index], to: &out)
    }
    out.append("]}\n" as StaticString)
  }

  /// Appends the entry's text as a JSON string.
  private static func appendText(_ entry: OutboxEntry, to out: inout [UInt8]) {
    // Nearly every text needs no escapes: then it is copied as it is, in one piece.
    let plain = entry.isPlain
    entry.withTextUTF8 { text in
      let raw = UnsafeRawBufferPointer(text)
      if plain {
        out.append(maxCount: raw.count + 2) { $0.writeQuoted(raw) }
      } else {
        JSONString.append(raw, to: &out)
      }
    }
  }

  /// A compacted log: the counter line, then the pending entries, those accepted together
  /// still together (a `batch` line for each run of them that is left), then a `released`
  /// line for each released one.
  static func compactionImage(
    nextCount: UInt64, pending: ArraySlice<OutboxEntry>
  ) -> [UInt8] {
    var image: [UInt8] = []
    image.append(#"{"op":"counter","count":"# as StaticString)
    image.appendDecimal(nextCount)
    image.append("}\n" as StaticString)
    var formatter = TimestampFormatter()
    // Entries accepted together share their room and time, so their pieces too.
    var shared: (room: RoomID?, created: Timestamp, pieces: Pieces)?
    var start = pending.startIndex
    while start < pending.endIndex {
      let first = pending[start]
      // A run: entries of one SendBatch with consecutive counts (an echo may have confirmed
      // one in the middle).
      var end = start + 1
      while end < pending.endIndex && pending[end].isInBatch(of: first)
        && pending[end].count == pending[end - 1].count + 1
      {
        end += 1
      }
      if shared == nil || shared?.room != first.room || shared?.created != first.created {
        shared = (
          first.room, first.created,
          pieces(room: first.room, created: first.created, formatter: &formatter)
        )
      }
      if let shared { appendAccepted(pending[start..<end], shared.pieces, to: &image) }
      start = end
    }
    for entry in pending where entry.released {
      image.append(#"{"op":"released","id":"# as StaticString)
      entry.clientID.appendJSON(to: &image)
      image.append("}\n" as StaticString)
    }
    return image
  }
}
