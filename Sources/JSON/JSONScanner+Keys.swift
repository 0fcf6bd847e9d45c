// The keys a scan reports, kept in one buffer so that comparing a member's key with them takes
// no reference counting.

extension JSONScanner {
  /// Keys whose values a scan reports, made once by the caller and used for every scan.
  ///
  /// Every member of every inbound frame is compared with each key: the keys' bytes sit in one
  /// array, read through one pointer for the whole scan, where an array of arrays retained and
  /// released an element for each comparison.
  public struct Keys: Sendable, Hashable {
    /// The keys' bytes, one after the other, and where each starts.
    let strings: PackedStrings
    /// How many keys there are.
    public var count: Int { strings.count }

    /// Keys from their UTF-8 bytes, at most `FieldRanges.capacity`.
    public init(_ keys: [[UInt8]]) {
      precondition(
        keys.count <= FieldRanges.capacity, "at most \(FieldRanges.capacity) keys per level")
      var strings = PackedStrings()
      for key in keys { key.withUnsafeBytes { strings.append(utf8: $0) } }
      self.strings = strings
    }

    /// Keys from strings.
    public init(_ keys: [String]) {
      self.init(keys.map { Array($0.utf8) })
    }

    /// No keys.
    public static let none = Keys([[UInt8]]())

    /// Calls `body` with a view of the keys that needs no reference counting.
    @inline(__always)
    func withTable<R>(_ body: (Table) -> R) -> R {
      strings.bytes.withUnsafeBufferPointer { bytes in
        strings.bounds.withUnsafeBufferPointer { bounds in
          body(
            Table(
              base: bytes.baseAddress ?? UnsafePointer(bitPattern: 1)!,
              bounds: bounds.baseAddress ?? UnsafePointer(bitPattern: 4)!, count: bounds.count - 1))
        }
      }
    }
  }

  /// The keys as pointers, valid inside `Keys.withTable`.
  struct Table {
    let base: UnsafePointer<UInt8>
    let bounds: UnsafePointer<Int32>
    let count: Int

    /// The index of the key with these bytes (a plain key's content), or nil.
    @inline(__always)
    func index(of key: UnsafeBufferPointer<UInt8>) -> Int? {
      var i = 0
      while i < count {
        let start = Int(bounds[i])
        // Most members match no key, and most differ from every key in length.
        if Int(bounds[i + 1]) - start == key.count && equals(base + start, key) { return i }
        i += 1
      }
      return nil
    }

    @inline(__always)
    private func equals(_ want: UnsafePointer<UInt8>, _ key: UnsafeBufferPointer<UInt8>) -> Bool {
      var j = 0
      while j < key.count && key[j] == want[j] { j += 1 }
      return j == key.count
    }
  }
}
