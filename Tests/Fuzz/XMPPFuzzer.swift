// libFuzzer target for what an XMPP server can send over WebSocket (RFC 7395): XMLFrameParser
// reading frames in any split, XMLWriter writing what it read back, SASLNegotiation reading a
// hostile server's SASL elements, and the XMPP dialect (LinkCore's XMPPProtocol) reading its
// stanzas.
//
// scripts/fuzz.sh builds JSON, WebSocket, XMPP and LinkCore as modules (with expat through
// CExpat) and compiles this file against them (public API only); see its header comment for
// the commands.
//
// Input layout (Tests/Fuzz/make_seed_corpus.py writes the seeds in it):
//
//   byte 0   bits 0-1: limits: 0 the defaults (1 MiB, depth 32, 10,000 elements), 1 a
//            256-byte frame, 2 depth 4, 3 at most 8 elements; bit 2: SASL (below), bit 3:
//            PLAIN allowed, bit 4: SCRAM-SHA-256 offered (else SCRAM-SHA-1); bit 5: stream
//            negotiation (below), bit 6: it asks to resume a session; bit 7: the dialect
//            (below)
//   byte 1   the chunk seed: how each frame is cut into pieces (FuzzSupport.chunkSizes)
//   then     frames, separated by NUL (which XML can never hold)
//
// Oracles (each failure prints what broke, then traps):
//  - one long-lived parser fed each frame in pieces gives, frame by frame, exactly what a
//    fresh parser gives for the frame whole, also after a frame it refused: the same event,
//    or the same refusal (for a frame that is not well-formed, both refuse, in words that
//    may differ: see `agree`);
//  - a frame that parses holds no DTD, entity declaration, processing instruction or comment
//    (outside CDATA sections, "<!" and "<?" are always markup in a document that parsed), is
//    within the byte limit, and its tree within the depth and element limits; the tree's
//    names, texts and attribute values together are no longer than the frame (nothing is
//    ever expanded);
//  - every element read, written by XMLWriter, reads back as itself, as the same kind of
//    event; and an `.open`/`.close` is the framing namespace's `open`/`close`;
//  - with bit 2, each stanza goes to a SCRAM or PLAIN SASLNegotiation (crypto replaced by a
//    cheap deterministic stand-in): what it sends is a SASL `response` with base64 text, and
//    once it succeeded, refused or failed, it is over;
//  - with bit 5, every event goes to a StreamNegotiation until it finishes: what it sends
//    writes and reads back as itself, it ends with exactly one final action (ready, refused,
//    failed, closed) and says nothing after it;
//  - with bit 7, every frame goes to an XMPPProtocol whose session is ready and whose room
//    catches up from its archive (a new one after each frame that breaks the session): every
//    record is a JSON object on one line whose id is its own stanza_id's value, the counts of
//    its acknowledgements never go back, and every frame it answers with is well-formed XML.

import Glibc
import JSON
import LinkCore
import WebSocket
import XMPP

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
  guard size >= 2 else { return 0 }
  let input = Array(UnsafeBufferPointer(start: data, count: size))
  let limits: XMLLimits
  switch input[0] & 3 {
  case 1: limits = XMLLimits(maxFrameBytes: 256)
  case 2: limits = XMLLimits(maxDepth: 4)
  case 3: limits = XMLLimits(maxElements: 8)
  default: limits = XMLLimits()
  }
  let frames = input[2...].split(separator: 0, omittingEmptySubsequences: false).map(Array.init)
  let streaming = XMLFrameParser(limits: limits)
  var sasl = input[0] & 4 == 4 ? makeNegotiation(flags: input[0]) : nil
  var settled = false
  var negotiation = input[0] & 32 == 32 ? makeStreamNegotiation(flags: input[0]) : nil
  var dialect = input[0] & 128 == 128 ? DialectCheck() : nil
  for (index, frame) in frames.enumerated() {
    dialect?.read(frame)
    let whole = XMLFrameParser(limits: limits).parse(frame: frame)
    var offset = 0
    frame.withUnsafeBytes { bytes in
      for size in chunkSizes(total: frame.count, seed: input[1] &+ UInt8(truncatingIfNeeded: index))
      {
        streaming.append(UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + size)]))
        offset += size
      }
    }
    let split = streaming.finishFrame()
    require(agree(whole, split), "frame \(index) whole: \(whole), split: \(split); \(hex(frame))")
    guard case .success(let event) = whole else { continue }
    check(event, frame: frame, limits: limits)
    if var stream = negotiation {
      checkNegotiation(stream.receive(event), finished: stream.isFinished)
      negotiation = stream.isFinished ? nil : stream
    }
    if case .stanza(let element) = event, !settled, var negotiation = sasl {
      switch negotiation.receive(element) {
      case .send(let reply):
        require(
          reply.name == "response" && reply.namespace == SASLNegotiation.namespace
            && (reply.text.isEmpty || Base64.decode(reply.text) != nil),
          "SASL sent \(XMLWriter.string(reply))")
      case .succeeded, .refused, .failed:
        settled = true
      }
      sasl = negotiation
    }
  }
  return 0
}

/// The same event, or both refused. Refusals are equal too, but for a frame that is not
/// well-formed: where expat notices that, and in which words, depends on where the pieces end
/// (a token cut by a piece's end is read again with what follows).
func agree(
  _ whole: Result<XMLFrameEvent, XMLStreamError>, _ split: Result<XMLFrameEvent, XMLStreamError>
) -> Bool {
  switch (whole, split) {
  case (.success(let a), .success(let b)): return a == b
  case (.failure(.malformed), .failure), (.failure, .failure(.malformed)): return true
  case (.failure(let a), .failure(let b)): return a == b
  default: return false
  }
}

func check(_ event: XMLFrameEvent, frame: [UInt8], limits: XMLLimits) {
  require(frame.count <= limits.maxFrameBytes, "a frame of \(frame.count) bytes parsed")
  require(!hasForbiddenMarkup(frame), "forbidden markup parsed: \(hex(frame))")
  let root: XMLElement
  switch event {
  case .open(let element), .close(let element):
    root = element
    require(element.namespace == XMPPFraming.namespace, "an open/close in \(element.namespace)")
    require(
      (element.name == "open") == (event == .open(element)),
      "\(element.name) read as the wrong event")
  case .stanza(let element):
    root = element
    require(
      element.namespace != XMPPFraming.namespace
        || (element.name != "open" && element.name != "close"),
      "the framing's \(element.name) read as a stanza")
  }
  var elements = 0
  var bytes = 0
  func visit(_ element: XMLElement, depth: Int) {
    elements += 1
    require(depth <= limits.maxDepth, "depth \(depth) parsed")
    bytes += element.name.utf8.count + element.text.utf8.count
    for attribute in element.attributes {
      bytes += attribute.name.utf8.count + attribute.value.utf8.count
    }
    for child in element.children { visit(child, depth: depth + 1) }
  }
  visit(root, depth: 1)
  require(elements <= limits.maxElements, "\(elements) elements parsed")
  require(bytes <= frame.count, "\(bytes) bytes of tree from a \(frame.count)-byte frame")
  let written = Array(XMLWriter.string(root).utf8)
  let again = XMLFrameParser().parse(frame: written)
  require(again == .success(event), "no round trip: \(again) from \(hex(written))")
}

/// Whether the frame holds `<!` or `<?` markup outside CDATA sections other than the XML
/// declaration at its start: in a document that parsed, that is a DTD, a comment or a
/// processing instruction.
func hasForbiddenMarkup(_ frame: [UInt8]) -> Bool {
  let cdataStart = Array("<![CDATA[".utf8)
  let cdataEnd = Array("]]>".utf8)
  let bom: [UInt8] = [0xEF, 0xBB, 0xBF]
  var start = frame.starts(with: bom) ? 3 : 0
  if frame[start...].starts(with: Array("<?xml".utf8)), frame.count > start + 5,
    [0x20, 0x09, 0x0A, 0x0D].contains(frame[start + 5])
  {
    // The declaration ends at the first "?>" (its values cannot hold one).
    var index = start + 5
    while index + 1 < frame.count, !(frame[index] == 0x3F && frame[index + 1] == 0x3E) {
      index += 1
    }
    start = index + 2
  }
  var index = start
  while index + 1 < frame.count {
    if frame[index...].starts(with: cdataStart) {
      index += cdataStart.count
      while index < frame.count, !frame[index...].starts(with: cdataEnd) { index += 1 }
      index += cdataEnd.count
      continue
    }
    if frame[index] == 0x3C, frame[index + 1] == 0x21 || frame[index + 1] == 0x3F { return true }
    index += 1
  }
  return false
}

/// A stand-in for OpenSSL: cheap, deterministic, and the right lengths.
let fakeCrypto: SCRAMCrypto = {
  @Sendable func fold(_ hash: SCRAMHash, _ parts: [UInt8]...) -> [UInt8] {
    var state = FNV(parts: parts)
    return (0..<(hash == .sha1 ? 20 : 32)).map { _ in state.next() }
  }
  return SCRAMCrypto(
    hash: { fold($0, $1) }, hmac: { fold($0, $1, $2) },
    pbkdf2: { hash, password, salt, _ in fold(hash, password, salt) })
}()

func makeStreamNegotiation(flags: UInt8) -> StreamNegotiation {
  let resume = flags & 64 == 64 ? Resumption(id: "sm-1", jid: "user@localhost/r", handled: 7) : nil
  var negotiation = StreamNegotiation(
    settings: NegotiationSettings(
      username: "user", domain: "localhost", resource: "r", password: "pencil",
      transport: .loopback, resume: resume),
    clientNonce: "fyko+d2lbbFgONRv9qkxdawL", crypto: fakeCrypto)
  checkNegotiation(negotiation.start(), finished: negotiation.isFinished)
  return negotiation
}

func checkNegotiation(_ actions: [NegotiationAction], finished: Bool) {
  var finals = 0
  for action in actions {
    require(finals == 0, "\(action) after the final action")
    switch action {
    case .send(let element):
      let again = XMLFrameParser().parse(frame: Array(XMLWriter.string(element).utf8))
      let same: Bool
      switch again {
      case .success(.open(let read)), .success(.stanza(let read)), .success(.close(let read)):
        same = read == element
      case .failure: same = false
      }
      require(same, "sent \(XMLWriter.string(element)), read back \(again)")
    case .authenticated, .resumptionRefused: break
    case .ready, .refused, .failed, .closed: finals += 1
    }
  }
  require(finished == (finals == 1), "finished \(finished) after \(actions)")
}

func makeNegotiation(flags: UInt8) -> SASLNegotiation? {
  let crypto = fakeCrypto
  var offered = [flags & 16 == 16 ? "SCRAM-SHA-256" : "SCRAM-SHA-1"]
  if flags & 8 == 8 { offered = ["PLAIN"] }
  var negotiation = try? SASLNegotiation(
    offered: offered, username: "user", password: "pencil", transport: .loopback,
    clientNonce: "fyko+d2lbbFgONRv9qkxdawL", crypto: crypto)
  _ = negotiation?.start()
  return negotiation
}

struct FNV {
  var value: UInt64 = 0xcbf2_9ce4_8422_2325

  init(parts: [[UInt8]]) {
    for part in parts {
      for byte in part { mix(byte) }
      mix(0xFF)
    }
  }

  mutating func mix(_ byte: UInt8) {
    value = (value ^ UInt64(byte)) &* 0x100_0000_01b3
  }

  mutating func next() -> UInt8 {
    mix(0)
    return UInt8(truncatingIfNeeded: value >> 29)
  }
}

/// The XMPP dialect, its session ready and its room catching up, and what was seen of it.
struct DialectCheck {
  static let room = "lobby@conference.localhost"
  var dialect: XMPPProtocol
  var lastCount: UInt32 = 0

  init() { dialect = Self.ready() }

  /// PLAIN over loopback, binding, stream management; the room joined after "sid-1".
  static func ready() -> XMPPProtocol {
    let streams = "xmlns:stream='http://etherx.jabber.org/streams'"
    let open = "<open xmlns='\(XMPPFraming.namespace)' from='localhost' id='s' version='1.0'/>"
    let frames = [
      open,
      "<stream:features \(streams)><mechanisms xmlns='urn:ietf:params:xml:ns:xmpp-sasl'>"
        + "<mechanism>PLAIN</mechanism></mechanisms></stream:features>",
      "<success xmlns='urn:ietf:params:xml:ns:xmpp-sasl'/>", open,
      "<stream:features \(streams)><bind xmlns='urn:ietf:params:xml:ns:xmpp-bind'/>"
        + "<sm xmlns='urn:xmpp:sm:3'/></stream:features>",
      "<iq xmlns='jabber:client' type='result' id='bind-1'><bind "
        + "xmlns='urn:ietf:params:xml:ns:xmpp-bind'><jid>user@localhost/r</jid></bind></iq>",
      "<enabled xmlns='urn:xmpp:sm:3' id='sm-1' resume='true'/>",
    ]
    let settings = XMPPProtocol.Settings(
      jid: JID(local: "user", domain: "localhost"), password: "pencil", resource: "r",
      transport: .loopback)
    var dialect = XMPPProtocol(
      settings,
      services: DialectServices(scram: fakeCrypto, nonce: { "fyko+d2lbbFgONRv9qkxdawL" }))
    _ = dialect.open(
      ClientHandshake.Result(
        response: HTTPResponseHead(
          status: 101, reason: "Switching Protocols", headers: HTTPHeaders()),
        subprotocol: "xmpp", deflate: nil))
    var last = ProtocolReading(record: nil)
    for frame in frames { last = dialect.read(.text(Array(frame.utf8))) }
    require(
      last.session == .ready, "the scripted negotiation did not end ready: \(last.session as Any)")
    if let room = RoomID(room) {
      _ = dialect.join(room, after: RoomPosition(id: Array("sid-1".utf8)))
    }
    _ = dialect.read(
      .text(
        Array(
          ("<presence xmlns='jabber:client' from='\(room)/user'><x "
            + "xmlns='http://jabber.org/protocol/muc#user'><status code='110'/></x></presence>")
            .utf8)))
    return dialect
  }

  mutating func read(_ frame: [UInt8]) {
    let reading = dialect.read(.binary(frame))
    var acknowledged = reading.moreRecords.map { ($0.record, $0.acknowledgement) }
    if let record = reading.record { acknowledged.insert((record, reading.acknowledgement), at: 0) }
    for (record, acknowledgement) in acknowledged {
      check(record, frame: frame)
      if let acknowledgement { count(acknowledgement) }
    }
    if let answer = reading.afterStored { count(answer) }
    for reply in reading.replies {
      let parsed = XMLFrameParser().parse(frame: reply.bytes)
      require((try? parsed.get()) != nil, "a reply that does not parse: \(hex(reply.bytes))")
    }
    // Broken, ended or moved: the connection ends, and the next frames go to a new one.
    if let session = reading.session, session != .ready {
      dialect = Self.ready()
      lastCount = 0
    }
  }

  private func check(_ record: InboundMessage, frame: [UInt8]) {
    let payload = record.payload.bytes
    require(!payload.contains(0x0A), "a record on two lines from \(hex(frame))")
    guard let data = try? JSONValue.parse(payload), data.objectValue != nil else {
      return require(false, "a record that is no JSON object: \(hex(payload))")
    }
    require(
      record.room.flatMap { try? JSONValue.parse($0) }?.stringValue != nil,
      "a room that is no JSON string from \(hex(frame))")
    let stanzaID = data["stanza_id"]?.stringValue
    guard let id = record.idBytes else {
      return require(stanzaID?.isEmpty ?? true, "a stanza_id without the record's id")
    }
    let text = String(decoding: id, as: UTF8.self)
    require(text == stanzaID, "the id \(text) is not the stanza_id \(stanzaID ?? "none")")
  }

  private mutating func count(_ frame: Message) {
    let text = frame.text ?? ""
    let prefix = "<a xmlns='urn:xmpp:sm:3' h='"
    guard text.hasPrefix(prefix), text.hasSuffix("'/>"),
      let count = UInt32(text.dropFirst(prefix.count).dropLast(3))
    else { return require(false, "an acknowledgement \(text)") }
    require(count >= lastCount, "the count went back from \(lastCount) to \(count)")
    lastCount = count
  }
}
