import CExpat

/// Builds the frame's element tree from expat's callbacks and keeps the first error.
///
/// After an error the parser is stopped, but expat may still deliver a callback or two that
/// it had under way (XML_StopParser's documentation): every handler checks `error` first.
final class TreeBuilder {
  private struct Open {
    var element: XMLElement
    var text: [UInt8] = []
  }

  let limits: XMLLimits
  var parser: OpaquePointer?
  private(set) var root: XMLElement?
  private(set) var error: XMLStreamError?
  private var stack: [Open] = []
  private var elements = 0
  /// Each namespace once per frame: expat hands every element its namespace in full, and a
  /// long namespace declared once on a frame of many elements would otherwise be copied into
  /// each of them (10,000 elements of a 100 KB namespace: a gigabyte from a 1 MB frame).
  private var namespaces: [String: String] = [:]

  init(limits: XMLLimits) {
    self.limits = limits
  }

  /// The builder behind expat's user data (see `XMLFrameParser.installHandlers`).
  static func from(_ user: UnsafeMutableRawPointer?) -> TreeBuilder? {
    guard let user else { return nil }
    return Unmanaged<TreeBuilder>.fromOpaque(user).takeUnretainedValue()
  }

  static func string(_ text: UnsafePointer<CChar>?) -> String {
    guard let text else { return "" }
    return String(cString: text)
  }

  func reset() {
    root = nil
    error = nil
    stack.removeAll(keepingCapacity: true)
    elements = 0
    namespaces.removeAll()
  }

  /// Keeps the first error and stops expat.
  func fail(_ error: XMLStreamError) {
    guard self.error == nil else { return }
    self.error = error
    if let parser { XML_StopParser(parser, 0) }
  }

  /// expat refused the input: its reason and position.
  func failFromExpat() {
    guard error == nil, let parser else { return }
    let reason = Self.string(XML_ErrorString(XML_GetErrorCode(parser)))
    error = .malformed(
      reason: reason, line: Int(XML_GetCurrentLineNumber(parser)),
      column: Int(XML_GetCurrentColumnNumber(parser)))
  }

  func start(
    name: UnsafePointer<CChar>?, attributes: UnsafeMutablePointer<UnsafePointer<CChar>?>?
  ) {
    guard error == nil else { return }
    guard stack.count < limits.maxDepth else { return fail(.tooDeep(limit: limits.maxDepth)) }
    elements += 1
    guard elements <= limits.maxElements else {
      return fail(.tooManyElements(limit: limits.maxElements))
    }
    let (namespace, local) = split(name)
    var element = XMLElement(local, namespace: namespace)
    if let attributes {
      var index = 0
      while let key = attributes[index] {
        let (attributeNamespace, attributeName) = split(key)
        let value = Self.string(attributes[index + 1])
        element.attributes.append(XMLAttribute(attributeName, value, namespace: attributeNamespace))
        index += 2
      }
    }
    stack.append(Open(element: element))
  }

  func end() {
    guard error == nil, var open = stack.popLast() else { return }
    open.element.text = String(decoding: open.text, as: UTF8.self)
    if stack.isEmpty {
      root = open.element
    } else {
      stack[stack.count - 1].element.children.append(open.element)
    }
  }

  func characters(_ bytes: UnsafePointer<CChar>?, _ count: Int) {
    guard error == nil, let bytes, count > 0, !stack.isEmpty else { return }
    let buffer = UnsafeRawBufferPointer(start: bytes, count: count)
    stack[stack.count - 1].text.append(contentsOf: buffer)
  }

  /// expat's "namespace U+0001 local name", or a bare local name outside any namespace.
  private func split(_ name: UnsafePointer<CChar>?) -> (String, String) {
    let text = Self.string(name)
    guard let cut = text.utf8.firstIndex(of: UInt8(XMLFrameParser.separator)) else {
      return ("", text)
    }
    let namespace = String(text[..<cut])
    let local = String(text[text.utf8.index(after: cut)...])
    if let known = namespaces[namespace] { return (known, local) }
    namespaces[namespace] = namespace
    return (namespace, local)
  }
}
