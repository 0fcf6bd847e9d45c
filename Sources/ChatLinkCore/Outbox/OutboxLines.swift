import JSON
import LinkCore

/// The lines of the outbox log (`outbox.jsonl`) that carry messages: `add` lines and the image
/// a compaction rewrites the log with. `OutboxLog` reads them back.
enum OutboxLines {
  /// The parts of an `add` line around its id, count and text: `,"room":R,"count":` and
  /// `,"time":"T","text":`.
  struct Pieces {
    var roomAndCount: [UInt8]
    var timeAndText: [UInt8]
  }

  /// The pieces for entries of this room accepted at this time.
  static func pieces(
    room: RoomID?, created: Timestamp, formatter: inout TimestampFormatter
  ) -> Pieces {
    var roomAndCount: [UInt8] = []
    roomAndCount.append(#","room":"# as StaticString)
    if let room { roomAndCount += room.json } else { roomAndCount.append("null" as StaticString) }
    roomAndCount.append(#","count":"# as StaticString)
    var timeAndText: [UInt8] = []
    timeAndText.append(#","time":""# as StaticString)
    formatter.append(created, to: &timeAndText)
    timeAndText.append(#"","text":"# as StaticString)
    return Pieces(roomAndCount: roomAndCount, timeAndText: timeAndText)
  }

  private static let addOpening: StaticString = #"{"op":"add","id":"#

  /// Appends the `add` lines of `entries`, which share `pieces` (their room and time).
  static func appendAdds(
    _ entries: some Collection<OutboxEntry>, _ pieces: Pieces, to out: inout [UInt8]
  ) {
    // The pieces are read through pointers taken once for the lot: captured as arrays, each
    // line would retain and release them.
    pieces.roomAndCount.withUnsafeBytes { roomAndCount in
      pieces.timeAndText.withUnsafeBytes { timeAndText in
        for entry in entries { appendAdd(entry, roomAndCount, timeAndText, to: &out) }
      }
    }
  }

  private static func appendAdd(
    _ entry: OutboxEntry, _ roomAndCount: UnsafeRawBufferPointer,
    _ timeAndText: UnsafeRawBufferPointer, to out: inout [UInt8]
  ) {
    // Nearly every line needs no escapes: then it is written in one piece.
    if entry.isPlain {
      entry.withTextUTF8 { text in
        entry.clientID.withUTF8 { id in
          let size =
            addOpening.utf8CodeUnitCount + id.count + roomAndCount.count + 20
            + timeAndText.count + text.count + 6
          out.append(maxCount: size) { line in
            line.write(addOpening)
            line.writeQuoted(UnsafeRawBufferPointer(id))
            line.write(roomAndCount)
            line.writeDecimal(entry.count)
            line.write(timeAndText)
            line.writeQuoted(UnsafeRawBufferPointer(text))
            line.write("}\n")
          }
        }
      }
      return
    }
    out.append(addOpening)
    entry.clientID.appendJSON(to: &out)
    out.append(contentsOf: roomAndCount)
    out.appendDecimal(entry.count)
    out.append(contentsOf: timeAndText)
    entry.withTextUTF8 { JSONString.append(UnsafeRawBufferPointer($0), to: &out) }
    out.append("}\n" as StaticString)
  }

  /// A compacted log: the counter line, then an `add` line for each pending entry.
  static func compactionImage(
    nextCount: UInt64, pending: ArraySlice<OutboxEntry>
  ) -> [UInt8] {
    var image: [UInt8] = []
    image.append(#"{"op":"counter","count":"# as StaticString)
    image.appendDecimal(nextCount)
    image.append("}\n" as StaticString)
    var formatter = TimestampFormatter()
    // Entries accepted together share their room and time, so their pieces too.
    var shared: (room: RoomID?, created: Timestamp, Pieces)?
    for entry in pending {
      if shared == nil || shared?.room != entry.room || shared?.created != entry.created {
        shared = (
          entry.room, entry.created,
          pieces(room: entry.room, created: entry.created, formatter: &formatter)
        )
      }
      if let shared { appendAdds(CollectionOfOne(entry), shared.2, to: &image) }
    }
    return image
  }
}
