/// Writes elements as XML text for XMPP frames.
///
/// Names are the caller's own constants and are written as they are; text and attribute
/// values are escaped, so any string goes out well-formed. An element declares its namespace
/// (`xmlns='…'`) where it differs from its parent's, which is how RFC 7395 frames stand alone:
/// the top element always declares its own. What XML 1.0 cannot carry at all (control
/// characters other than tab, line feed and carriage return; U+FFFE, U+FFFF) becomes U+FFFD,
/// since a server refuses the whole stream for one such character (RFC 6120 §11.1).
public enum XMLWriter {
  /// The namespace of `xml:lang`, which needs no declaration (Namespaces in XML 1.0 §3).
  public static let xmlNamespace = "http://www.w3.org/XML/1998/namespace"

  /// The element as text.
  public static func string(_ element: XMLElement) -> String {
    var out: [UInt8] = []
    write(element, into: &out)
    return String(decoding: out, as: UTF8.self)
  }

  /// Appends the element to `out`; `parentNamespace` is the namespace in scope around it.
  public static func write(
    _ element: XMLElement, into out: inout [UInt8], parentNamespace: String = ""
  ) {
    out.append(UInt8(ascii: "<"))
    out.append(contentsOf: element.name.utf8)
    if element.namespace != parentNamespace {
      appendAttribute("xmlns", element.namespace, into: &out)
    }
    // Attributes in other namespaces get prefixes of their own, declared on this element.
    var prefixes: [String] = []
    for attribute in element.attributes {
      switch attribute.namespace {
      case "":
        appendAttribute(attribute.name, attribute.value, into: &out)
      case xmlNamespace:
        appendAttribute("xml:" + attribute.name, attribute.value, into: &out)
      default:
        let prefix: String
        if let known = prefixes.firstIndex(of: attribute.namespace) {
          prefix = "ns\(known)"
        } else {
          prefix = "ns\(prefixes.count)"
          prefixes.append(attribute.namespace)
          appendAttribute("xmlns:" + prefix, attribute.namespace, into: &out)
        }
        appendAttribute(prefix + ":" + attribute.name, attribute.value, into: &out)
      }
    }
    if element.children.isEmpty && element.text.isEmpty {
      out.append(contentsOf: "/>".utf8)
      return
    }
    out.append(UInt8(ascii: ">"))
    appendEscaped(element.text, attribute: false, into: &out)
    for child in element.children {
      write(child, into: &out, parentNamespace: element.namespace)
    }
    out.append(contentsOf: "</".utf8)
    out.append(contentsOf: element.name.utf8)
    out.append(UInt8(ascii: ">"))
  }

  /// Appends ` name='value'`, the value escaped.
  private static func appendAttribute(_ name: String, _ value: String, into out: inout [UInt8]) {
    out.append(UInt8(ascii: " "))
    out.append(contentsOf: name.utf8)
    out.append(contentsOf: "='".utf8)
    appendEscaped(value, attribute: true, into: &out)
    out.append(UInt8(ascii: "'"))
  }

  /// Appends `text` escaped for character data or, with `attribute`, for a value in single
  /// quotes. In a value, tab, line feed and carriage return are written as references, since
  /// a parser turns them into spaces otherwise (XML 1.0 §3.3.3); in text, carriage return is,
  /// since a parser turns CR LF into LF (§2.11). `>` is always escaped, so `]]>` never appears.
  public static func appendEscaped(_ text: String, attribute: Bool, into out: inout [UInt8]) {
    var plain = true
    for byte in text.utf8
    where byte < 0x20 || byte == 0x26 || byte == 0x3C || byte == 0x3E
      || byte == 0x27 || byte == 0x22 || byte == 0xEF
    {
      plain = false
      break
    }
    if plain {
      out.append(contentsOf: text.utf8)
      return
    }
    for scalar in text.unicodeScalars {
      switch scalar {
      case "&": out.append(contentsOf: "&amp;".utf8)
      case "<": out.append(contentsOf: "&lt;".utf8)
      case ">": out.append(contentsOf: "&gt;".utf8)
      case "'" where attribute: out.append(contentsOf: "&apos;".utf8)
      case "\"" where attribute: out.append(contentsOf: "&quot;".utf8)
      case "\t" where attribute: out.append(contentsOf: "&#9;".utf8)
      case "\n" where attribute: out.append(contentsOf: "&#10;".utf8)
      case "\r": out.append(contentsOf: "&#13;".utf8)
      case "\t", "\n": out.append(UInt8(truncatingIfNeeded: scalar.value))
      case "\u{0}"..."\u{1F}", "\u{FFFE}", "\u{FFFF}":
        out.append(contentsOf: "\u{FFFD}".utf8)
      default: UTF8.encode(scalar) { out.append($0) }
      }
    }
  }
}
