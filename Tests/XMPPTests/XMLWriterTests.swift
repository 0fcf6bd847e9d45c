import TestSupport
import XCTest
import XMPP

final class XMLWriterTests: XCTestCase {
  private func reparse(_ element: XMLElement) -> XMLElement? {
    let result = XMLFrameParser().parse(frame: Array(XMLWriter.string(element).utf8))
    guard case .success(let event) = result else { return nil }
    switch event {
    case .open(let root), .stanza(let root), .close(let root): return root
    }
  }

  func testTheOpenIsRFC7395s() {
    XCTAssertEqual(
      XMPPFraming.open(to: "example.org"),
      "<open xmlns='urn:ietf:params:xml:ns:xmpp-framing' to='example.org' version='1.0'/>")
    XCTAssertEqual(
      XMPPFraming.open(to: "example.org", language: "en"),
      "<open xmlns='urn:ietf:params:xml:ns:xmpp-framing' to='example.org' version='1.0' "
        + "xml:lang='en'/>")
  }

  func testTheCloseIsRFC7395sAndParsesAsAClose() {
    XCTAssertEqual(XMPPFraming.close, "<close xmlns='urn:ietf:params:xml:ns:xmpp-framing'/>")
    guard case .success(.close) = XMLFrameParser().parse(frame: Array(XMPPFraming.close.utf8))
    else { return XCTFail() }
  }

  func testTheOpenParsesAsAnOpenWithItsDomain() {
    let frame = Array(XMPPFraming.open(to: "a'b&c").utf8)
    guard case .success(.open(let open)) = XMLFrameParser().parse(frame: frame) else {
      return XCTFail()
    }
    XCTAssertEqual(open.attribute("to"), "a'b&c")
  }

  func testTextIsEscapedSoMarkupStaysText() {
    let body = XMLElement("body", text: "a < b && c > d ]]> \"q\" 'a'\r\n")
    XCTAssertEqual(
      XMLWriter.string(body),
      "<body>a &lt; b &amp;&amp; c &gt; d ]]&gt; \"q\" 'a'&#13;\n</body>")
  }

  func testAttributeValuesAreEscapedForSingleQuotes() {
    let element = XMLElement("x", attributes: [XMLAttribute("v", "'\"<&>\t\n\r")])
    XCTAssertEqual(XMLWriter.string(element), "<x v='&apos;&quot;&lt;&amp;&gt;&#9;&#10;&#13;'/>")
  }

  func testCharactersXMLCannotCarryBecomeTheReplacementCharacter() {
    let element = XMLElement("b", attributes: [XMLAttribute("v", "\u{0}")], text: "a\u{1}\u{FFFF}b")
    XCTAssertEqual(XMLWriter.string(element), "<b v='\u{FFFD}'>a\u{FFFD}\u{FFFD}b</b>")
    XCTAssertNotNil(reparse(element))
  }

  func testNamespacesAreDeclaredOnlyWhereTheyChange() {
    let message = XMLElement(
      "message", namespace: "jabber:client",
      children: [
        XMLElement("body", namespace: "jabber:client", text: "hi"),
        XMLElement("origin-id", namespace: "urn:xmpp:sid:0", attributes: [XMLAttribute("id", "1")]),
        XMLElement("bare"),
      ])
    XCTAssertEqual(
      XMLWriter.string(message),
      "<message xmlns='jabber:client'><body>hi</body>"
        + "<origin-id xmlns='urn:xmpp:sid:0' id='1'/><bare xmlns=''/></message>")
    XCTAssertEqual(reparse(message), message)
  }

  func testNamespacedAttributesGetPrefixesAndRoundTrip() {
    let element = XMLElement(
      "x", namespace: "n",
      attributes: [
        XMLAttribute("lang", "en", namespace: XMLWriter.xmlNamespace),
        XMLAttribute("a", "1", namespace: "urn:one"), XMLAttribute("b", "2", namespace: "urn:two"),
        XMLAttribute("c", "3", namespace: "urn:one"),
      ])
    XCTAssertEqual(
      XMLWriter.string(element),
      "<x xmlns='n' xml:lang='en' xmlns:ns0='urn:one' ns0:a='1' xmlns:ns1='urn:two' ns1:b='2' "
        + "ns0:c='3'/>")
    XCTAssertEqual(reparse(element), element)
  }

  func testEveryProsodyFrameRoundTrips() throws {
    for frame in ProsodyFrames.all {
      guard case .success(let event) = XMLFrameParser().parse(frame: Array(frame.utf8)) else {
        return XCTFail(frame)
      }
      switch event {
      case .open(let root), .stanza(let root), .close(let root):
        XCTAssertEqual(reparse(root), root, frame)
      }
    }
  }

  func testRandomTreesRoundTripThroughTheParser() {
    var random = SplitMix64(seed: 7395)
    let names = ["message", "body", "x", "item", "a-b", "z.9"]
    let namespaces = ["", "jabber:client", "urn:xmpp:sid:0", "http://x/?a=1&b='2'"]
    let pieces = ["a", " ", "&", "<", ">", "'", "\"", "\t", "\n", "\r", "é", "👋", "]]>", "&amp;"]
    func text() -> String {
      (0..<random.below(6)).map { _ in pieces[random.below(pieces.count)] }.joined()
    }
    func tree(depth: Int) -> XMLElement {
      var element = XMLElement(
        names[random.below(names.count)], namespace: namespaces[random.below(namespaces.count)])
      for index in 0..<random.below(3) {
        element.attributes.append(
          XMLAttribute("k\(index)", text(), namespace: random.below(4) == 0 ? "urn:k" : ""))
      }
      element.text = text()
      if depth < 4 {
        element.children = (0..<random.below(3)).map { _ in tree(depth: depth + 1) }
      }
      return element
    }
    for _ in 0..<500 {
      let element = tree(depth: 0)
      XCTAssertEqual(reparse(element), element, XMLWriter.string(element))
    }
  }
}
