@preconcurrency import Glibc

/// A value shared by threads, reached only under a pthread mutex.
///
/// The one lock of Sources. Not `Synchronization.Mutex`: on Linux, when contended, it waits
/// in raw futex calls that ThreadSanitizer does not see, so the accesses under it are reported
/// as races, and a sanitizer that cries wolf hides the real ones. ThreadSanitizer intercepts
/// `pthread_mutex_lock`, so a report under this lock is a race; an uncontended pthread mutex
/// costs what the futex does.
public final class ThreadLock<State> {
  // The mutex lives in memory of its own because a pthread mutex must not move once
  // initialised.
  private let mutex: UnsafeMutablePointer<pthread_mutex_t>
  private var state: State

  /// Creates the lock around `initialState`.
  public init(_ initialState: State) {
    mutex = .allocate(capacity: 1)
    mutex.initialize(to: pthread_mutex_t())
    // Default attributes cannot fail to initialise a normal mutex (glibc returns 0).
    pthread_mutex_init(mutex, nil)
    state = initialState
  }

  deinit {
    pthread_mutex_destroy(mutex)
    mutex.deinitialize(count: 1)
    mutex.deallocate()
  }

  /// Runs `body` with the state while holding the lock; `body` must not take it again.
  public func withLock<Result>(_ body: (inout State) throws -> Result) rethrows -> Result {
    pthread_mutex_lock(mutex)
    defer { pthread_mutex_unlock(mutex) }
    return try body(&state)
  }
}

// Unchecked: `state` is read and written only between lock and unlock of the mutex, and
// only Sendable state may be shared this way.
extension ThreadLock: @unchecked Sendable where State: Sendable {}
