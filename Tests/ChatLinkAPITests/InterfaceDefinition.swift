import JSON

/// A Varlink interface description read from its text: the declarations the tests compare
/// with the Swift types. Only what io.chatlink.Daemon and org.varlink.service use is read:
/// `interface`, `type`, `method` and `error`, members `name: type` with `?`, `[]` and named
/// types (no enums, no maps); anything else is an error, so the test cannot pass by reading
/// less than is there.
struct InterfaceDefinition {
  /// One member of a type, a method's parameters or reply, or an error.
  struct Member: Equatable, CustomStringConvertible {
    var name: String
    var type: String
    var description: String { "\(name): \(type)" }
  }

  /// Why the text did not read.
  struct ParseError: Error, CustomStringConvertible {
    var description: String
  }

  var name = ""
  var types: [String: [Member]] = [:]
  var methods: [String: (parameters: [Member], reply: [Member])] = [:]
  var errors: [String: [Member]] = [:]

  init(_ text: String) throws {
    var tokens = Self.tokens(text)[...]
    func next() throws -> String {
      guard let token = tokens.popFirst() else { throw ParseError(description: "unexpected end") }
      return token
    }
    func expect(_ wanted: String) throws {
      let token = try next()
      guard token == wanted else {
        throw ParseError(description: "expected '\(wanted)', found '\(token)'")
      }
    }
    func members() throws -> [Member] {
      try expect("(")
      var list: [Member] = []
      while tokens.first != ")" {
        let name = try next()
        try expect(":")
        let type = try next()
        guard type.allSatisfy({ $0.isLetter || $0.isNumber || "?[]_".contains($0) }) else {
          throw ParseError(description: "unsupported type '\(type)' of \(name)")
        }
        list.append(Member(name: name, type: type))
        if tokens.first == "," { _ = try next() }
      }
      try expect(")")
      return list
    }
    while let keyword = tokens.popFirst() {
      switch keyword {
      case "interface": name = try next()
      case "type": types[try next()] = try members()
      case "error": errors[try next()] = try members()
      case "method":
        let method = try next()
        let parameters = try members()
        try expect("->")
        methods[method] = (parameters, try members())
      default: throw ParseError(description: "unexpected '\(keyword)'")
      }
    }
  }

  /// Words, `(`, `)`, `,`, `:` and `->`, comments (from # to the end of the line) left out.
  private static func tokens(_ text: String) -> [String] {
    var tokens: [String] = []
    for line in text.split(separator: "\n") {
      let code = line.prefix { $0 != "#" }
      var word = ""
      var previous: Character = " "
      for character in code {
        if character == ">" && previous == "-" {
          word.removeLast()
          if !word.isEmpty { tokens.append(word) }
          word = ""
          tokens.append("->")
        } else if "(),:".contains(character) || character.isWhitespace {
          if !word.isEmpty { tokens.append(word) }
          word = ""
          if !character.isWhitespace { tokens.append(String(character)) }
        } else {
          word.append(character)
        }
        previous = character
      }
      if !word.isEmpty { tokens.append(word) }
    }
    return tokens
  }

  /// What is wrong with `value` as a value of `type` (a member type or a named type); empty
  /// when nothing is.
  func problems(_ value: JSONValue?, as type: String, at path: String) -> [String] {
    if type.hasPrefix("?") {
      guard let value, !value.isNull else { return [] }
      return problems(value, as: String(type.dropFirst()), at: path)
    }
    guard let value else { return ["\(path) is missing (\(type))"] }
    if type.hasPrefix("[]") {
      guard case .array(let items) = value else { return ["\(path) is not an array (\(type))"] }
      return items.enumerated().flatMap {
        problems($1, as: String(type.dropFirst(2)), at: "\(path)[\($0)]")
      }
    }
    let fits: Bool
    switch type {
    case "string": fits = value.stringValue != nil
    case "int": fits = { if case .int = value { true } else { false } }()
    case "float": fits = value.doubleValue != nil
    case "bool": fits = value.boolValue != nil
    case "object": fits = value.objectValue != nil
    default:
      guard let members = types[type] else { return ["\(path): no type \(type) in the IDL"] }
      return problems(value, members: members, at: path)
    }
    return fits ? [] : ["\(path) is not a \(type): \(value)"]
  }

  /// What is wrong with `value` as an object of `members`: a member it lacks, one the IDL does
  /// not declare, one of the wrong type.
  func problems(_ value: JSONValue, members: [Member], at path: String) -> [String] {
    guard let object = value.objectValue else { return ["\(path) is not an object"] }
    let declared = Set(members.map(\.name))
    var found = object.filter { !declared.contains($0.key) }.map {
      "\(path).\($0.key) is not in the IDL"
    }
    for member in members {
      found += problems(value[member.name], as: member.type, at: "\(path).\(member.name)")
    }
    return found
  }
}

extension String {
  /// "retryIn" as the wire spells it: "retry_in".
  var snakeCased: String {
    var out = ""
    for character in self {
      if character.isUppercase {
        out += "_" + character.lowercased()
      } else {
        out.append(character)
      }
    }
    return out
  }
}
