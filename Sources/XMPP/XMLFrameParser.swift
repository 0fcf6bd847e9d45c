import CExpat

/// What one RFC 7395 frame holds: the framing's `<open/>` or `<close/>`, or any other
/// element (a stanza, stream features, a SASL or stream management element).
public enum XMLFrameEvent: Hashable, Sendable {
  case open(XMLElement)
  case stanza(XMLElement)
  case close(XMLElement)
}

/// Reads the frames of an XMPP-over-WebSocket session (RFC 7395) with expat.
///
/// RFC 7395 §3.3.3 makes every WebSocket message one complete element that parses on its
/// own, so each frame is read as a document of its own: `append` takes its bytes in any
/// split, `finishFrame` says what it held and readies the parser for the next frame. The
/// result does not depend on the split: expat is incremental, and the byte limit is applied
/// at the same byte wherever the pieces end. Only the words and the position of a
/// `.malformed` refusal may differ, since expat reads a token cut by a piece's end again with
/// what follows (the xmpp fuzzer holds it to that).
///
/// What XMPP forbids (RFC 6120 §11.1: DTDs, entity declarations, processing instructions,
/// comments) stops the parse at the handler expat calls for it, so nothing declared is ever
/// expanded; frames, nesting and element counts are bounded by `XMLLimits`. The parser owns C
/// memory and is used from one thread at a time.
public final class XMLFrameParser {
  public let limits: XMLLimits
  private let builder: TreeBuilder
  private let parser: OpaquePointer?
  private var frameBytes = 0

  /// The separator expat puts between an element's namespace and its local name: U+0001
  /// cannot occur in an XML 1.0 document, not even as a character reference.
  static let separator = CChar(1)

  /// What every frame gets when expat could not allocate its parser.
  static let noParser = XMLStreamError.malformed(
    reason: "expat could not allocate a parser", line: 0, column: 0)

  public init(limits: XMLLimits = XMLLimits()) {
    self.limits = limits
    builder = TreeBuilder(limits: limits)
    parser = XML_ParserCreateNS("UTF-8", Self.separator)
    builder.parser = parser
    installHandlers()
  }

  deinit {
    if let parser { XML_ParserFree(parser) }
  }

  /// Reads the next piece of the current frame.
  public func append(_ bytes: UnsafeRawBufferPointer) {
    guard let parser else { return builder.fail(Self.noParser) }
    guard builder.error == nil else { return }
    let room = limits.maxFrameBytes - frameBytes
    let take = min(bytes.count, max(room, 0))
    var offset = 0
    // XML_Parse takes an Int32 length: large pieces go in slices.
    while offset < take, builder.error == nil {
      let length = min(take - offset, 1 << 24)
      let start = bytes.baseAddress.map { $0 + offset }?.assumingMemoryBound(to: CChar.self)
      if XML_Parse(parser, start, Int32(length), 0) == XML_STATUS_ERROR {
        builder.failFromExpat()
      }
      offset += length
    }
    frameBytes += take
    if take < bytes.count {
      builder.fail(.tooLarge(limit: limits.maxFrameBytes))
    }
  }

  /// Reads the next piece of the current frame.
  public func append(_ bytes: [UInt8]) {
    bytes.withUnsafeBytes { append($0) }
  }

  /// The current frame is complete: its element, or why it was refused. The parser is then
  /// ready for the next frame.
  public func finishFrame() -> Result<XMLFrameEvent, XMLStreamError> {
    if parser == nil { builder.fail(Self.noParser) }
    if builder.error == nil, let parser, XML_Parse(parser, nil, 0, 1) == XML_STATUS_ERROR {
      builder.failFromExpat()
    }
    let result: Result<XMLFrameEvent, XMLStreamError>
    if let error = builder.error {
      result = .failure(error)
    } else if let root = builder.root {
      result = .success(Self.event(root))
    } else {
      // expat refuses a document without an element, so this is only a safety net.
      result = .failure(.malformed(reason: "no element found", line: 1, column: 0))
    }
    frameBytes = 0
    builder.reset()
    if let parser {
      // A reset clears the handlers and the user data: set them again.
      XML_ParserReset(parser, "UTF-8")
      installHandlers()
    }
    return result
  }

  /// Reads one whole frame.
  public func parse(frame: [UInt8]) -> Result<XMLFrameEvent, XMLStreamError> {
    append(frame)
    return finishFrame()
  }

  private static func event(_ root: XMLElement) -> XMLFrameEvent {
    guard root.namespace == XMPPFraming.namespace else { return .stanza(root) }
    switch root.name {
    case "open": return .open(root)
    case "close": return .close(root)
    default: return .stanza(root)
    }
  }

  private func installHandlers() {
    guard let parser else { return }
    // Unchecked: the builder is handed to expat unretained. Rule: expat calls the handlers
    // only inside XML_Parse, which only this parser's methods call, and the parser holds the
    // builder strongly for as long as the expat parser exists (both die in deinit), so the
    // pointer is valid at every call.
    XML_SetUserData(parser, Unmanaged.passUnretained(builder).toOpaque())
    XML_SetElementHandler(
      parser,
      { user, name, attributes in
        TreeBuilder.from(user)?.start(name: name, attributes: attributes)
      },
      { user, _ in TreeBuilder.from(user)?.end() })
    XML_SetCharacterDataHandler(parser) { user, bytes, count in
      TreeBuilder.from(user)?.characters(bytes, Int(count))
    }
    XML_SetStartDoctypeDeclHandler(parser) { user, _, _, _, _ in
      TreeBuilder.from(user)?.fail(.doctype)
    }
    XML_SetEntityDeclHandler(parser) { user, name, _, _, _, _, _, _, _ in
      TreeBuilder.from(user)?.fail(.entityDeclaration(name: TreeBuilder.string(name)))
    }
    XML_SetProcessingInstructionHandler(parser) { user, target, _ in
      TreeBuilder.from(user)?.fail(.processingInstruction(target: TreeBuilder.string(target)))
    }
    XML_SetCommentHandler(parser) { user, _ in TreeBuilder.from(user)?.fail(.comment) }
  }
}
