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
        // Most members match no key, and most differ from every key in length or first byte;
        // the rest are compared out of line, which keeps this loop small enough for the
        // scanner's members to be inlined with it.
        if Int(bounds[i + 1]) - start == key.count
          && (key.isEmpty || (base[start] == key[0] && Self.equals(base + start, key)))
        {
          return i
        }
        i += 1
      }
      return nil
    }

    /// Whether the `key.count` bytes at `want` are `key`'s, compared a word at a time: a key is
    /// a few bytes, and a byte at a time cost a compare and a branch for each. Each length reads
    /// its bytes as two loads that may overlap, so nothing past either key is read.
    @inline(never)
    private static func equals(
      _ want: UnsafePointer<UInt8>, _ key: UnsafeBufferPointer<UInt8>
    ) -> Bool {
      let count = key.count
      guard count > 0, let have = key.baseAddress else { return true }
      let a = UnsafeRawPointer(want)
      let b = UnsafeRawPointer(have)
      if count >= 8 {
        var offset = 0
        while offset + 8 < count {
          if a.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
            != b.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
          {
            return false
          }
          offset += 8
        }
        return a.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self)
          == b.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self)
      }
      if count >= 4 {
        return a.loadUnaligned(as: UInt32.self) == b.loadUnaligned(as: UInt32.self)
          && a.loadUnaligned(fromByteOffset: count - 4, as: UInt32.self)
            == b.loadUnaligned(fromByteOffset: count - 4, as: UInt32.self)
      }
      if count >= 2 {
        return a.loadUnaligned(as: UInt16.self) == b.loadUnaligned(as: UInt16.self)
          && a.loadUnaligned(fromByteOffset: count - 2, as: UInt16.self)
            == b.loadUnaligned(fromByteOffset: count - 2, as: UInt16.self)
      }
      return want[0] == have[0]
    }
  }
}
