import CSystemd
@preconcurrency import Glibc

/// The epoll events a watcher asks for or receives.
public struct IOEvents: OptionSet, Sendable, Hashable {
  public let rawValue: UInt32
  public init(rawValue: UInt32) { self.rawValue = rawValue }

  /// Data can be read (or the peer closed).
  public static let readable = IOEvents(rawValue: UInt32(EPOLLIN.rawValue))
  /// Data can be written without blocking.
  public static let writable = IOEvents(rawValue: UInt32(EPOLLOUT.rawValue))
  /// An error is pending on the fd.
  public static let error = IOEvents(rawValue: UInt32(EPOLLERR.rawValue))
  /// Both directions hung up.
  public static let hangup = IOEvents(rawValue: UInt32(EPOLLHUP.rawValue))
  /// The peer shut down its write side.
  public static let peerClosed = IOEvents(rawValue: UInt32(EPOLLRDHUP.rawValue))
}

/// An sd-event source owned from Swift; cancelled when cancelled explicitly or released.
///
/// Owners keep their sources in named stored properties, and handlers capture the owner
/// weakly or unowned, so dropping the owner tears its sources down.
public class EventSource {
  var source: OpaquePointer?

  init(adopting source: OpaquePointer?, rc: Int32, box: Unmanaged<AnyObject>, call: String)
    throws(SystemError)
  {
    guard rc >= 0, let source else {
      box.release()
      throw SystemError(call, errno: rc)
    }
    self.source = source
    // The box lives exactly as long as the source: sd-event calls this when it frees it.
    sd_event_source_set_destroy_callback(source) { userdata in
      if let userdata { Unmanaged<AnyObject>.fromOpaque(userdata).release() }
    }
  }

  convenience init<A>(
    adopting source: OpaquePointer?, rc: Int32, box: Unmanaged<CallbackBox<A>>, call: String
  ) throws(SystemError) {
    let erased = Unmanaged<AnyObject>.fromOpaque(box.toOpaque())
    try self.init(adopting: source, rc: rc, box: erased, call: call)
  }

  deinit {
    cancel()
  }

  /// Removes the source from the loop; safe to call more than once, or from its own handler.
  public func cancel() {
    if let source {
      sd_event_source_disable_unref(source)
      self.source = nil
    }
  }

  /// Whether the source is still on the loop.
  public var isActive: Bool { source != nil }

  func setEnabled(_ mode: Int32) {
    if let source { sd_event_source_set_enabled(source, mode) }
  }
}

/// A watched file descriptor.
public final class IOWatcher: EventSource {
  /// The events asked for; change it to start or stop waiting for writability.
  public var events: IOEvents {
    get {
      var value: UInt32 = 0
      if let source { sd_event_source_get_io_events(source, &value) }
      return IOEvents(rawValue: value)
    }
    set {
      if let source { sd_event_source_set_io_events(source, newValue.rawValue) }
    }
  }

  /// Pauses or resumes the watcher without losing it.
  public var isEnabled: Bool {
    get {
      var enabled: Int32 = 0
      if let source { sd_event_source_get_enabled(source, &enabled) }
      return enabled != Int32(SD_EVENT_OFF)
    }
    set { setEnabled(newValue ? Int32(SD_EVENT_ON) : Int32(SD_EVENT_OFF)) }
  }
}

/// A one-shot CLOCK_MONOTONIC timer that can be re-armed.
public final class Timer: EventSource {
  /// Fires the handler once, `delay` microseconds from now (replacing any earlier schedule).
  public func schedule(after delay: Microseconds) {
    guard let source else { return }
    sd_event_source_set_time_relative(source, delay)
    setEnabled(Int32(SD_EVENT_ONESHOT))
  }

  /// Fires the handler once at `deadline` (CLOCK_MONOTONIC microseconds).
  public func schedule(at deadline: Microseconds) {
    guard let source else { return }
    sd_event_source_set_time(source, deadline)
    setEnabled(Int32(SD_EVENT_ONESHOT))
  }

  /// Stops the timer from firing until scheduled again.
  public func disarm() {
    setEnabled(Int32(SD_EVENT_OFF))
  }

  /// Whether the timer is scheduled.
  public var isArmed: Bool {
    var enabled: Int32 = 0
    if let source { sd_event_source_get_enabled(source, &enabled) }
    return enabled != Int32(SD_EVENT_OFF)
  }
}

/// A signal handled on the loop.
public final class SignalWatcher: EventSource {}
