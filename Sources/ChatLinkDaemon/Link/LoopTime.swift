import EventLoop
import LinkCore

// The event loop counts microseconds on CLOCK_MONOTONIC; the middle of the daemon counts
// `Duration`s and `MonotonicInstant`s. The conversion happens here only.

extension EventLoop {
  /// The loop's current time as an instant.
  var instant: MonotonicInstant { MonotonicInstant(sinceOrigin: .microseconds(now)) }
}

extension Timer {
  /// Fires once after `delay`.
  func schedule(after delay: Duration) {
    schedule(after: delay.wholeMicroseconds)
  }

  /// Fires once at `instant`.
  func schedule(at instant: MonotonicInstant) {
    schedule(at: instant.sinceOrigin.wholeMicroseconds)
  }
}
