// What a scan reports: the validity verdict's companions and the requested fields' ranges.

extension JSONScanner {
  /// The byte ranges of requested fields, by index in the request: a table of fixed size kept
  /// inline, so that a scan allocates nothing (every inbound frame is scanned).
  public struct FieldRanges: Sendable, Hashable, RandomAccessCollection {
    /// The most fields one scan can report, per level.
    public static let capacity = 8
    // -1 where a field is absent. 32-bit offsets keep a result at 72 bytes, copied on every
    // scan (`scan` takes no buffer of 2 GiB or more).
    private var starts = SIMD8<Int32>(repeating: -1)
    private var ends = SIMD8<Int32>(repeating: -1)
    /// How many fields were requested.
    public let count: Int

    init(count: Int) {
      precondition(count <= Self.capacity, "at most \(Self.capacity) keys per level")
      self.count = count
    }

    public var startIndex: Int { 0 }
    public var endIndex: Int { count }

    /// The range of field `index`'s value, or nil when the field is absent.
    public subscript(index: Int) -> Range<Int>? {
      get {
        precondition(index >= 0 && index < count, "field index out of range")
        return starts[index] < 0 ? nil : Int(starts[index])..<Int(ends[index])
      }
      set {
        precondition(index >= 0 && index < count, "field index out of range")
        starts[index] = Int32(truncatingIfNeeded: newValue?.lowerBound ?? -1)
        ends[index] = Int32(truncatingIfNeeded: newValue?.upperBound ?? -1)
      }
    }
  }

  /// What a scan found.
  public struct Result: Sendable, Hashable {
    /// Byte ranges of the requested top-level fields' values, by index in the request.
    public var topLevel: FieldRanges
    /// Byte ranges of the requested fields inside the nested object, by index.
    public var nested: FieldRanges
    /// Whether insignificant whitespace contains CR or LF (the text must be minified
    /// before it can be one JSON line).
    public var hasLineBreaks: Bool
    /// Whether the top-level value is an object.
    public var isObject: Bool
    /// The offsets of the first and the last backslash that starts an escape in a string (a
    /// key or a value); `Int32.max` and -1 when no string has escapes. Found as the strings
    /// are read (only strings with escapes take the path that sets them), so a caller need not
    /// search a value again to know that it has none.
    @usableFromInline var firstEscape: Int32 = .max
    @usableFromInline var lastEscape: Int32 = -1

    /// An empty result, to be filled by `scan(_:…into:)`.
    public init() {
      self.init(
        topLevel: FieldRanges(count: 0), nested: FieldRanges(count: 0), hasLineBreaks: false,
        isObject: false)
    }

    init(topLevel: FieldRanges, nested: FieldRanges, hasLineBreaks: Bool, isObject: Bool) {
      self.topLevel = topLevel
      self.nested = nested
      self.hasLineBreaks = hasLineBreaks
      self.isObject = isObject
    }

    /// Whether a string's escape may lie in `range` of the text scanned: false when none does,
    /// so a string value there is its text as it stands. True when escapes lie both before and
    /// after `range`, whether or not one lies in it.
    @inlinable
    public func mayHaveEscapes(in range: Range<Int>) -> Bool {
      Int(firstEscape) < range.upperBound && Int(lastEscape) >= range.lowerBound
    }
  }
}
