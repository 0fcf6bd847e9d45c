import XCTest
import XMPP

final class XMLFrameParserTests: XCTestCase {
  private let client = "jabber:client"

  private func parse(_ text: String, limits: XMLLimits = XMLLimits()) -> Result<
    XMLFrameEvent, XMLStreamError
  > {
    XMLFrameParser(limits: limits).parse(frame: Array(text.utf8))
  }

  private func stanza(_ text: String) throws -> XMLElement {
    guard case .success(.stanza(let element)) = parse(text) else {
      XCTFail("not a stanza: \(parse(text))")
      throw XMLStreamError.comment
    }
    return element
  }

  private func error(_ text: String, limits: XMLLimits = XMLLimits()) -> XMLStreamError? {
    if case .failure(let error) = parse(text, limits: limits) { return error }
    return nil
  }

  private func isMalformed(_ error: XMLStreamError?) -> Bool {
    if case .malformed = error { return true }
    return false
  }

  func testStreamFeaturesAreAStanzaWithTheirNamespacesResolved() throws {
    let features = try stanza(ProsodyFrames.features)
    XCTAssertEqual(features.name, "features")
    XCTAssertEqual(features.namespace, "http://etherx.jabber.org/streams")
    let mechanisms = try XCTUnwrap(
      features.child("mechanisms", namespace: "urn:ietf:params:xml:ns:xmpp-sasl"))
    XCTAssertEqual(mechanisms.children("mechanism").map(\.text), ["SCRAM-SHA-1", "PLAIN"])
  }

  func testTheFramingsOpenIsAnOpenEventWithItsAttributes() throws {
    guard case .success(.open(let open)) = parse(ProsodyFrames.open) else {
      return XCTFail("\(parse(ProsodyFrames.open))")
    }
    XCTAssertEqual(open.attribute("from"), "localhost")
    XCTAssertEqual(open.attribute("version"), "1.0")
    XCTAssertEqual(open.attribute("lang", namespace: XMLWriter.xmlNamespace), "en")
  }

  func testTheFramingsCloseIsACloseEventAndCarriesSeeOtherURI() throws {
    let text = "<close xmlns='urn:ietf:params:xml:ns:xmpp-framing' see-other-uri='wss://b/x'/>"
    guard case .success(.close(let close)) = parse(text) else { return XCTFail("\(parse(text))") }
    XCTAssertEqual(XMPPFraming.seeOtherURI(close), "wss://b/x")
  }

  func testAnOpenOutsideTheFramingNamespaceIsAStanza() throws {
    XCTAssertEqual(try stanza("<open xmlns='jabber:client'/>").name, "open")
  }

  func testAGroupchatMessageKeepsBodyStanzaIDAndDelay() throws {
    let message = try stanza(ProsodyFrames.groupchat)
    XCTAssertEqual(message.namespace, client)
    XCTAssertEqual(message.attribute("type"), "groupchat")
    XCTAssertEqual(message.child("body")?.text, "héllo & <welcome> 👋")
    XCTAssertEqual(message.child("body")?.namespace, client)
    let stanzaID = try XCTUnwrap(message.child("stanza-id", namespace: "urn:xmpp:sid:0"))
    XCTAssertEqual(stanzaID.attribute("id"), "9f4e1c2a-0001")
    XCTAssertEqual(stanzaID.attribute("by"), "lobby@conference.localhost")
    XCTAssertEqual(
      message.child("delay", namespace: "urn:xmpp:delay")?.attribute("stamp"),
      "2026-12-06T17:00:00Z")
  }

  func testEverySplitPointGivesTheSameEvent() {
    for frame in ProsodyFrames.all + EjabberdTranscripts.serverFrames {
      let bytes = Array(frame.utf8)
      let whole = XMLFrameParser().parse(frame: bytes)
      XCTAssertNoThrow(try whole.get(), frame)
      let parser = XMLFrameParser()
      for cut in 0...bytes.count {
        parser.append(Array(bytes[..<cut]))
        parser.append(Array(bytes[cut...]))
        XCTAssertEqual(parser.finishFrame(), whole, "cut at \(cut) of \(frame)")
      }
    }
  }

  func testOneByteAtATimeGivesTheSameEvent() {
    let bytes = Array(ProsodyFrames.groupchat.utf8)
    let parser = XMLFrameParser()
    for byte in bytes { parser.append([byte]) }
    XCTAssertEqual(parser.finishFrame(), XMLFrameParser().parse(frame: bytes))
  }

  func testPredefinedEntitiesAndCharacterReferencesAreDecoded() throws {
    let element = try stanza("<b a='&apos;&quot;&#10;'>&amp;&lt;&gt;&#x1F44B;&#233;</b>")
    XCTAssertEqual(element.text, "&<>👋é")
    XCTAssertEqual(element.attribute("a"), "'\"\n")
  }

  func testCDATAIsText() throws {
    XCTAssertEqual(try stanza("<b><![CDATA[<not> & markup]]></b>").text, "<not> & markup")
  }

  func testAnXMLDeclarationIsAccepted() throws {
    XCTAssertEqual(try stanza("<?xml version='1.0'?><a/>").name, "a")
  }

  func testTheParserReadsFrameAfterFrameAndARefusedFrameDoesNotSpoilTheNext() {
    let parser = XMLFrameParser()
    XCTAssertEqual(parser.parse(frame: Array("<a/>".utf8)), .success(.stanza(XMLElement("a"))))
    XCTAssertEqual(parser.parse(frame: Array("<!DOCTYPE a><a/>".utf8)), .failure(.doctype))
    XCTAssertEqual(parser.parse(frame: Array("<b".utf8)).isFailure, true)
    XCTAssertEqual(parser.parse(frame: Array("<c/>".utf8)), .success(.stanza(XMLElement("c"))))
  }

  func testADoctypeIsRefused() {
    XCTAssertEqual(error("<!DOCTYPE message SYSTEM 'http://x/y.dtd'><message/>"), .doctype)
    XCTAssertEqual(error("<!DOCTYPE message><message/>")?.condition, "restricted-xml")
  }

  /// The classic billion laughs: ten levels of ten references each, 10^9 "lol"s expanded.
  func testTheBillionLaughsBombIsRefusedBeforeAnyExpansion() {
    var bomb = "<?xml version='1.0'?><!DOCTYPE lolz [<!ENTITY lol0 'lol'>"
    for level in 1...9 {
      bomb += "<!ENTITY lol\(level) '" + String(repeating: "&lol\(level - 1);", count: 10) + "'>"
    }
    bomb += "]><lolz>&lol9;</lolz>"
    XCTAssertEqual(error(bomb), .doctype)
  }

  /// The quadratic blowup: one 50 KB entity referenced 50,000 times (2.5 GB expanded), which
  /// expat's own amplification limit does not catch early.
  func testTheQuadraticBlowupIsRefusedBeforeAnyExpansion() {
    let bomb =
      "<!DOCTYPE b [<!ENTITY a '" + String(repeating: "x", count: 50_000) + "'>]><b>"
      + String(repeating: "&a;", count: 50_000) + "</b>"
    let started = ContinuousClock.now
    XCTAssertEqual(error(bomb, limits: XMLLimits(maxFrameBytes: 1 << 20)), .doctype)
    XCTAssertLessThan(ContinuousClock.now - started, .seconds(1))
  }

  func testAnUndeclaredEntityIsMalformed() {
    XCTAssertTrue(isMalformed(error("<b>&lol;</b>")))
  }

  func testAProcessingInstructionIsRefusedWithItsTarget() {
    XCTAssertEqual(error("<a><?evil data?></a>"), .processingInstruction(target: "evil"))
    XCTAssertEqual(error("<?evil?><a/>"), .processingInstruction(target: "evil"))
  }

  func testACommentIsRefused() {
    XCTAssertEqual(error("<a><!-- hi --></a>"), .comment)
    XCTAssertEqual(error("<a/><!-- after -->"), .comment)
  }

  func testAFrameOverTheByteLimitIsRefusedAtEverySplit() {
    let limits = XMLLimits(maxFrameBytes: 64)
    let exact = "<a>" + String(repeating: "x", count: 57) + "</a>"
    XCTAssertEqual(exact.utf8.count, 64)
    XCTAssertNoThrow(try parse(exact, limits: limits).get())
    let over = Array(("<a>" + String(repeating: "x", count: 58) + "</a>").utf8)
    for cut in 0...over.count {
      let parser = XMLFrameParser(limits: limits)
      parser.append(Array(over[..<cut]))
      parser.append(Array(over[cut...]))
      XCTAssertEqual(parser.finishFrame(), .failure(.tooLarge(limit: 64)), "cut at \(cut)")
    }
  }

  func testAnErrorBeforeTheLimitWinsOverTheLimitWhateverTheSplit() {
    let limits = XMLLimits(maxFrameBytes: 32)
    let bytes = Array(("<a><?pi?>" + String(repeating: "x", count: 40) + "</a>").utf8)
    XCTAssertEqual(
      XMLFrameParser(limits: limits).parse(frame: bytes),
      .failure(.processingInstruction(target: "pi")))
  }

  func testNestingDeeperThanTheLimitIsRefused() {
    let limits = XMLLimits(maxDepth: 4)
    XCTAssertNoThrow(try parse("<a><b><c><d/></c></b></a>", limits: limits).get())
    XCTAssertEqual(error("<a><b><c><d><e/></d></c></b></a>", limits: limits), .tooDeep(limit: 4))
    let deep = String(repeating: "<a>", count: 100_000)
    XCTAssertEqual(error(deep), .tooDeep(limit: 32))
  }

  func testMoreElementsThanTheLimitAreRefused() {
    let limits = XMLLimits(maxElements: 3)
    XCTAssertNoThrow(try parse("<a><b/><c/></a>", limits: limits).get())
    XCTAssertEqual(error("<a><b/><c/><d/></a>", limits: limits), .tooManyElements(limit: 3))
  }

  func testANamespaceIsSharedByItsElementsNotCopiedIntoEach() throws {
    let namespace = "urn:" + String(repeating: "n", count: 10_000)
    let frame = "<a xmlns='\(namespace)'>" + String(repeating: "<b/>", count: 100) + "</a>"
    let root = try stanza(frame)
    func storage(_ text: String) -> UnsafePointer<UInt8>? {
      var text = text
      return text.withUTF8 { $0.baseAddress }
    }
    XCTAssertEqual(root.children.count, 100)
    XCTAssertEqual(root.children[99].namespace, namespace)
    XCTAssertEqual(Set(root.children.map { storage($0.namespace) }).count, 1)
    XCTAssertEqual(storage(root.children[0].namespace), storage(root.namespace))
  }

  func testMalformedFramesAreRefusedWithExpatsReason() {
    for text in [
      "", "   ", "<a>", "<a></b>", "<a/><b/>", "text", "<a x='1' x='2'/>", "<p:a/>",
      "<a xmlns:p=''/>", "<a>\u{1}</a>",
    ] {
      XCTAssertTrue(isMalformed(error(text)), "'\(text)' gave \(String(describing: error(text)))")
    }
    XCTAssertEqual(
      error("<a/><b/>"), .malformed(reason: "junk after document element", line: 1, column: 4))
    XCTAssertEqual(error("<a>")?.condition, "not-well-formed")
  }

  func testInvalidUTF8IsMalformed() {
    let parser = XMLFrameParser()
    let bytes: [UInt8] = [0x3C, 0x61, 0x3E, 0xFF, 0x3C, 0x2F, 0x61, 0x3E]
    XCTAssertTrue(isMalformed(parser.parse(frame: bytes).failure))
  }

  func testAnEncodingDeclarationCannotSwitchAwayFromUTF8() throws {
    let element = try stanza("<?xml version='1.0' encoding='ISO-8859-1'?><a>é</a>")
    XCTAssertEqual(element.text, "é")
  }

  func testErrorsDescribeThemselvesForTheLog() {
    XCTAssertEqual(
      XMLStreamError.tooLarge(limit: 10).description, "an XML frame over the 10-byte limit")
    XCTAssertEqual(XMLStreamError.tooDeep(limit: 3).condition, "policy-violation")
    XCTAssertEqual(XMLStreamError.entityDeclaration(name: "x").condition, "restricted-xml")
  }
}

extension Result {
  var isFailure: Bool {
    if case .failure = self { return true }
    return false
  }

  var failure: Failure? {
    if case .failure(let error) = self { return error }
    return nil
  }
}
