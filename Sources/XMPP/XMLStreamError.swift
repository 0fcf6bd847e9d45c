/// Why a frame's XML was refused. Every case ends the session: XMPP has no way to skip a
/// stanza it cannot read (RFC 6120 §4.9.3).
public enum XMLStreamError: Error, Hashable, Sendable, CustomStringConvertible {
  /// The frame is longer than the limit (`MaxMessageSize=`), in bytes.
  case tooLarge(limit: Int)
  /// Elements nest deeper than the limit.
  case tooDeep(limit: Int)
  /// The frame holds more elements than the limit.
  case tooManyElements(limit: Int)
  /// A document type declaration: XMPP forbids DTDs (RFC 6120 §11.1), and refusing them at
  /// the first `<!DOCTYPE` is what keeps entity bombs from growing.
  case doctype
  /// An entity declaration (only reachable inside a DTD, which `doctype` stops first: kept
  /// as a second wall should the first ever fall).
  case entityDeclaration(name: String)
  /// A processing instruction, which XMPP forbids (RFC 6120 §11.1).
  case processingInstruction(target: String)
  /// A comment, which XMPP forbids (RFC 6120 §11.1).
  case comment
  /// Not well-formed XML (or not namespace-well-formed): expat's own words and where.
  case malformed(reason: String, line: Int, column: Int)

  /// The RFC 6120 §4.9.3 stream error condition a server would be told.
  public var condition: String {
    switch self {
    case .tooLarge, .tooDeep, .tooManyElements: "policy-violation"
    case .doctype, .entityDeclaration, .processingInstruction, .comment: "restricted-xml"
    case .malformed: "not-well-formed"
    }
  }

  public var description: String {
    switch self {
    case .tooLarge(let limit): "an XML frame over the \(limit)-byte limit"
    case .tooDeep(let limit): "XML elements nested deeper than \(limit)"
    case .tooManyElements(let limit): "an XML frame of more than \(limit) elements"
    case .doctype: "a DOCTYPE in the XML stream (DTDs are forbidden in XMPP)"
    case .entityDeclaration(let name): "an entity declaration (\(name)) in the XML stream"
    case .processingInstruction(let target):
      "a processing instruction (\(target)) in the XML stream"
    case .comment: "a comment in the XML stream (forbidden in XMPP)"
    case .malformed(let reason, let line, let column):
      "malformed XML at line \(line), column \(column): \(reason)"
    }
  }
}

/// Bounds on what one frame may make the parser hold.
public struct XMLLimits: Hashable, Sendable {
  /// Bytes per frame: `MaxMessageSize=` in the daemon.
  public var maxFrameBytes: Int
  /// Element nesting. The deepest stanza the XMPP backend reads, an archived message inside
  /// a MAM result (`message/result/forwarded/message/body`) with a data form or XHTML body,
  /// is about ten deep; 32 leaves room and bounds the builder's stack.
  public var maxDepth: Int
  /// Elements per frame. Each costs a tree node of about a hundred bytes for four bytes of
  /// input (`<a/>`), so this bounds the tree where the byte limit alone would not; a MAM page
  /// or a stanza with a large data form has a few hundred.
  public var maxElements: Int

  public init(maxFrameBytes: Int = 1 << 20, maxDepth: Int = 32, maxElements: Int = 10_000) {
    self.maxFrameBytes = maxFrameBytes
    self.maxDepth = maxDepth
    self.maxElements = maxElements
  }
}
