/// A first-in, first-out buffer over an array whose consumed front is dropped lazily: taking
/// from the front costs what is taken, not what stays, and the memory is reclaimed once the
/// consumed part is the larger one. The delivery ledger, the durable acknowledgements and the
/// outbox keep their queues in it.
public struct FIFOBuffer<Element> {
  @usableFromInline var storage: [Element] = []
  @usableFromInline var head = 0

  /// An empty buffer.
  public init() {}

  /// The elements, oldest first; their indices are stable until the next removal.
  @inlinable public var elements: ArraySlice<Element> { storage[head...] }
  /// How many elements there are.
  @inlinable public var count: Int { storage.count - head }
  /// Whether there are none.
  @inlinable public var isEmpty: Bool { head == storage.count }

  /// Appends at the back.
  @inlinable public mutating func append(_ element: Element) {
    storage.append(element)
  }

  /// Appends at the back, in order.
  @inlinable public mutating func append(contentsOf elements: some Sequence<Element>) {
    storage.append(contentsOf: elements)
  }

  /// Removes the oldest elements while `predicate` holds for them; returns them, oldest first,
  /// without copying: the slice shares the buffer's memory, so the buffer's next change copies
  /// what it keeps (never more than it would have copied of what left), unless the slice is
  /// gone by then, as a confirmation's is once it has been handled.
  @inlinable public mutating func takeFirst(while predicate: (Element) -> Bool)
    -> ArraySlice<Element>
  {
    var end = head
    while end < storage.count && predicate(storage[end]) { end += 1 }
    let taken = storage[head..<end]
    head = end
    compact()
    return taken
  }

  /// Removes the oldest elements while `predicate` holds for them; returns how many (for a
  /// caller that does not need them: nothing is copied).
  @inlinable public mutating func dropFirst(while predicate: (Element) -> Bool) -> Int {
    var end = head
    while end < storage.count && predicate(storage[end]) { end += 1 }
    let dropped = end - head
    guard dropped > 0 else { return 0 }
    head = end
    compact()
    return dropped
  }

  /// Changes the element at `index` (an index of `elements`) in place.
  @inlinable public mutating func update(at index: Int, _ body: (inout Element) -> Void) {
    body(&storage[index])
  }

  /// Removes the element at `index` (an index of `elements`).
  @inlinable @discardableResult public mutating func remove(at index: Int) -> Element {
    let element = storage[index]
    if index == head {
      head += 1
      compact()
    } else {
      storage.remove(at: index)
    }
    return element
  }

  /// Removes everything; a small buffer keeps its capacity for what comes next.
  @inlinable public mutating func removeAll() {
    storage.removeAll(keepingCapacity: storage.capacity <= 4096)
    head = 0
  }

  @inlinable mutating func compact() {
    if head == storage.count {
      removeAll()
    } else if head >= 1024 && head * 2 >= storage.count {
      storage.removeSubrange(..<head)
      head = 0
    }
  }
}

extension FIFOBuffer: Sendable where Element: Sendable {}
