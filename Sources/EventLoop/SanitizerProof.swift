#if DEBUG
  @preconcurrency import Glibc

  /// Small programs with one known bug each, or none, for `make sanitize` to run in the
  /// sanitizer builds of chatlinkd: a run without reports proves something only once a bug
  /// of the kind it looks for is seen to be reported, through the same options and the same
  /// report collection. Debug builds only: chatlinkd runs one when
  /// CHATLINK_DEBUG_SANITIZER_PROOF names it, instead of the daemon.
  public enum SanitizerProof: String, CaseIterable, Sendable {
    /// Two threads count with one variable and no lock: a data race, for ThreadSanitizer.
    case race
    /// The same two threads counting under `ThreadLock`: no race, so no report.
    case locked
    /// A write to a heap block after it was freed, for AddressSanitizer.
    case useAfterFree = "use-after-free"

    /// The environment variable that names a proof.
    public static let environmentVariable = "CHATLINK_DEBUG_SANITIZER_PROOF"

    /// Increments per thread: enough for the two threads to overlap.
    static let rounds = 100_000

    /// The proof the environment names, if any.
    public static func requested() -> String? {
      getenv(environmentVariable).map { String(cString: $0) }
    }

    /// Runs the program and returns what it printed, e.g. the final count.
    @discardableResult
    public func run() -> String {
      switch self {
      case .race:
        let counter = UnguardedCounter()
        Self.onTwoThreads { counter.value += 1 }
        return "race: \(counter.value) of \(2 * Self.rounds)"
      case .locked:
        let counter = ThreadLock(0)
        Self.onTwoThreads { counter.withLock { $0 += 1 } }
        return "locked: \(counter.withLock { $0 }) of \(2 * Self.rounds)"
      case .useAfterFree:
        let block = UnsafeMutablePointer<Int>.allocate(capacity: 4)
        block.initialize(repeating: 0, count: 4)
        block.deallocate()
        block[1] = 1
        return "use-after-free: wrote to a freed block"
      }
    }

    /// Runs `step` `rounds` times on a new thread and on this one at once. A barrier before
    /// and after the steps keeps both threads alive and stepping together, so that what they
    /// do in between is ordered by nothing (ThreadSanitizer may miss a race with a thread that
    /// has already ended).
    static func onTwoThreads(_ step: @escaping @Sendable () -> Void) {
      let barrier = Barrier(parties: 2)
      let body: @Sendable () -> Void = {
        barrier.wait()
        for _ in 0..<rounds { step() }
        barrier.wait()
      }
      let context = Unmanaged.passRetained(ThreadBody(body)).toOpaque()
      var thread = pthread_t()
      let rc = pthread_create(
        &thread, nil,
        { context in
          guard let context else { return nil }
          Unmanaged<ThreadBody>.fromOpaque(context).takeRetainedValue().body()
          return nil
        }, context)
      guard rc == 0 else {
        Unmanaged<ThreadBody>.fromOpaque(context).release()
        return
      }
      body()
      pthread_join(thread, nil)
    }
  }

  /// A pthread barrier that ThreadSanitizer sees, for `SanitizerProof.onTwoThreads`.
  private final class Barrier: @unchecked Sendable {
    // Unchecked: the barrier is made for threads to wait on it at once; it never moves.
    private let barrier = UnsafeMutablePointer<pthread_barrier_t>.allocate(capacity: 1)

    init(parties: UInt32) { pthread_barrier_init(barrier, nil, parties) }

    deinit {
      pthread_barrier_destroy(barrier)
      barrier.deallocate()
    }

    func wait() { pthread_barrier_wait(barrier) }
  }

  /// A counter whose Sendable conformance is a lie: the race of `SanitizerProof.race`.
  private final class UnguardedCounter: @unchecked Sendable {
    var value = 0
  }

  /// A closure handed to a new thread.
  private final class ThreadBody: Sendable {
    let body: @Sendable () -> Void
    init(_ body: @escaping @Sendable () -> Void) { self.body = body }
  }
#endif
