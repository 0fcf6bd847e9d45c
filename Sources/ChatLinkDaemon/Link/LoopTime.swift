import EventLoop
import JSON
import LinkCore

// The event loop counts microseconds on CLOCK_MONOTONIC and the wall clock is a `Timestamp`
// of microseconds since the epoch; the daemon counts `Duration`s and `MonotonicInstant`s.
// Every conversion between them is here, so no other file of the daemon does arithmetic on
// microseconds.

extension EventLoop {
  /// The loop's current time as an instant.
  var instant: MonotonicInstant { MonotonicInstant(sinceOrigin: .microseconds(now)) }

  /// A timer that may fire up to `accuracy` late (so the loop can wake up less often).
  func makeTimer(accuracy: Duration, handler: @escaping () -> Void) throws(SystemError) -> Timer {
    try makeTimer(accuracy: accuracy.loopMicroseconds, handler: handler)
  }
}

extension Duration {
  /// The span in the loop's microseconds (whole ones; a negative span is zero).
  var loopMicroseconds: Microseconds { Microseconds(wholeMicroseconds) }
}

extension Timer {
  /// Fires once after `delay`.
  func schedule(after delay: Duration) {
    schedule(after: delay.loopMicroseconds)
  }

  /// Fires once at `instant`.
  func schedule(at instant: MonotonicInstant) {
    schedule(at: instant.sinceOrigin.loopMicroseconds)
  }
}

extension Timestamp {
  /// Seconds since the epoch, for metrics.
  var secondsSinceEpoch: Double { Double(microseconds) / 1e6 }

  /// The span from `earlier` to this moment (negative when `earlier` is later).
  func since(_ earlier: Timestamp) -> Duration {
    .microseconds(microseconds - earlier.microseconds)
  }
}
