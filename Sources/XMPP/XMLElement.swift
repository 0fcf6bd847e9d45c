/// One attribute of an element: its local name, its namespace ("" for an unprefixed
/// attribute, which belongs to no namespace) and its value.
public struct XMLAttribute: Hashable, Sendable {
  public var name: String
  public var namespace: String
  public var value: String

  public init(_ name: String, _ value: String, namespace: String = "") {
    self.name = name
    self.namespace = namespace
    self.value = value
  }
}

/// An element as XMPP uses it: a name in a namespace, attributes, child elements and the text
/// directly inside it.
///
/// XMPP has no mixed content worth keeping in order (RFC 6120 stanzas put text only in leaf
/// elements such as `<body/>`), so `text` is all the character data directly inside the
/// element, joined, and the writer puts it before the children. Namespace prefixes are not
/// kept: an element is its (namespace, name), which is what XMPP's meaning depends on.
public struct XMLElement: Hashable, Sendable {
  public var name: String
  public var namespace: String
  public var attributes: [XMLAttribute]
  public var children: [XMLElement]
  public var text: String

  public init(
    _ name: String, namespace: String = "", attributes: [XMLAttribute] = [],
    children: [XMLElement] = [], text: String = ""
  ) {
    self.name = name
    self.namespace = namespace
    self.attributes = attributes
    self.children = children
    self.text = text
  }

  /// The value of the attribute `name` in `namespace` ("": an unprefixed attribute), if any.
  public func attribute(_ name: String, namespace: String = "") -> String? {
    attributes.first { $0.name == name && $0.namespace == namespace }?.value
  }

  /// The first child named `name`, in `namespace` when one is given.
  public func child(_ name: String, namespace: String? = nil) -> XMLElement? {
    children.first { $0.name == name && (namespace == nil || $0.namespace == namespace) }
  }

  /// Every child named `name`, in `namespace` when one is given, in document order.
  public func children(_ name: String, namespace: String? = nil) -> [XMLElement] {
    children.filter { $0.name == name && (namespace == nil || $0.namespace == namespace) }
  }
}
