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

  /// Appends the `add` line of `entry`.
  static func appendAdd(
    _ entry: OutboxEntry, _ pieces: Pieces, to out: inout [UInt8]
  ) {
    // Nearly every line needs no escapes: then it is written in one piece.
    if entry.isPlain {
      var text = entry.text
      entry.clientID.withUTF8 { id in
        text.withUTF8 { text in
          let size =
            addOpening.utf8CodeUnitCount + id.count + pieces.roomAndCount.count + 20
            + pieces.timeAndText.count + text.count + 6
          out.append(maxCount: size) { line in
            line.write(addOpening)
            line.writeQuoted(UnsafeRawBufferPointer(id))
            line.write(pieces.roomAndCount)
            line.writeDecimal(entry.count)
            line.write(pieces.timeAndText)
            line.writeQuoted(UnsafeRawBufferPointer(text))
            line.write("}\n")
          }
        }
      }
      return
    }
    out.append(addOpening)
    entry.clientID.withUTF8 { JSONString.append(UnsafeRawBufferPointer($0), to: &out) }
    out += pieces.roomAndCount
    out.appendDecimal(entry.count)
    out += pieces.timeAndText
    out.appendJSONString(entry.text)
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
      if let shared { appendAdd(entry, shared.2, to: &image) }
    }
    return image
  }
}
