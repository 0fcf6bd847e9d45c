/// One option, flag or positional argument as the parser and help generator see it.
final class ArgumentSlot {
  enum Kind {
    case option
    case flag
    case positional
  }

  let kind: Kind
  let longName: String?
  let shortName: Character?
  /// What help and usage show for the value: `<room>`.
  let valueName: String
  let help: String
  let isRequired: Bool
  let defaultDescription: String?
  let hint: String?
  /// The help section; nil is OPTIONS (or ARGUMENTS).
  var section: String?
  /// Stores a value; false when the word is not valid for this slot.
  let assign: (String) -> Bool
  var isSet = false

  init(
    kind: Kind, label: String, name: NameSpecification, valueName: String?, help: String,
    isRequired: Bool, defaultDescription: String?, hint: String?,
    assign: @escaping (String) -> Bool
  ) {
    self.kind = kind
    let bare = label.hasPrefix("_") ? String(label.dropFirst()) : label
    if kind == .positional {
      longName = nil
      shortName = nil
    } else {
      (longName, shortName) = name.resolve(label: bare)
    }
    self.valueName = valueName ?? Self.kebab(bare)
    self.help = help
    self.isRequired = isRequired
    self.defaultDescription = defaultDescription
    self.hint = hint
    self.assign = assign
  }

  /// `sinceTime` → `since-time`.
  static func kebab(_ name: String) -> String {
    var out = ""
    for character in name {
      if character.isUppercase {
        if !out.isEmpty { out.append("-") }
        out += character.lowercased()
      } else {
        out.append(character)
      }
    }
    return out
  }

  /// The slots of `value`'s property wrappers, in declaration order.
  static func collect(from value: Any) -> [ArgumentSlot] {
    Mirror(reflecting: value).children.flatMap { child -> [ArgumentSlot] in
      guard let provider = child.value as? any ArgumentSlotProvider else { return [] }
      return provider.slots(label: child.label ?? "")
    }
  }

  /// As a help label: `-r, --room <room>`, `--json`, `<text>`.
  var label: String {
    switch kind {
    case .positional: return "<\(valueName)>"
    case .flag, .option:
      var names: [String] = []
      if let shortName { names.append("-\(shortName)") }
      if let longName { names.append("--\(longName)") }
      let joined = names.joined(separator: ", ")
      return kind == .flag ? joined : "\(joined) <\(valueName)>"
    }
  }

  /// As the usage line shows it: `[--room <room>]`, `--room <room>`, `<text>`.
  var usage: String {
    let spelled: String
    switch kind {
    case .positional: spelled = "<\(valueName)>"
    case .flag: spelled = longName.map { "--\($0)" } ?? shortName.map { "-\($0)" } ?? ""
    case .option:
      spelled = (longName.map { "--\($0)" } ?? shortName.map { "-\($0)" } ?? "") + " <\(valueName)>"
    }
    return isRequired ? spelled : "[\(spelled)]"
  }

  /// As error messages name it: `--room <room>` or `<text>`.
  var spelled: String {
    switch kind {
    case .positional: "<\(valueName)>"
    case .flag: longName.map { "--\($0)" } ?? shortName.map { "-\($0)" } ?? ""
    case .option:
      (longName.map { "--\($0)" } ?? shortName.map { "-\($0)" } ?? "") + " <\(valueName)>"
    }
  }
}
