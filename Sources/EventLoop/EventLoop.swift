import CSystemd
@preconcurrency import Glibc

/// Microseconds on CLOCK_MONOTONIC, the clock sd-event uses for timers.
public typealias Microseconds = UInt64

/// The process's single event loop: a thin owner of an sd-event loop (sd-event(3)).
///
/// Every socket, timer and signal of the daemon is a source on this loop, and all of them
/// run on the thread that calls `run()`. Nothing here is thread-safe, by design; work that
/// must block runs on a `BackgroundWorker`, whose results come back through an fd.
public final class EventLoop {
  let event: OpaquePointer

  /// Creates a new loop (sd_event_new).
  public init() throws(SystemError) {
    var event: OpaquePointer?
    let rc = sd_event_new(&event)
    guard rc >= 0, let event else { throw SystemError("sd_event_new", errno: rc) }
    self.event = event
  }

  deinit {
    sd_event_unref(event)
  }

  /// Runs until `exit(code:)`; returns the exit code.
  @discardableResult
  public func run() throws(SystemError) -> Int32 {
    let rc = sd_event_loop(event)
    guard rc >= 0 else { throw SystemError("sd_event_loop", errno: rc) }
    return rc
  }

  /// Runs one iteration, waiting at most `timeout` microseconds; for tests.
  public func runOnce(timeout: Microseconds) throws(SystemError) {
    let rc = sd_event_run(event, timeout)
    guard rc >= 0 else { throw SystemError("sd_event_run", errno: rc) }
  }

  /// Asks `run()` to return `code` after the current iteration.
  public func exit(code: Int32 = 0) {
    sd_event_exit(event, code)
  }

  /// The loop's view of CLOCK_MONOTONIC, cached for the iteration being dispatched.
  public var now: Microseconds {
    var usec: UInt64 = 0
    if sd_event_now(event, CLOCK_MONOTONIC, &usec) < 0 {
      var ts = timespec()
      clock_gettime(CLOCK_MONOTONIC, &ts)
      usec = UInt64(ts.tv_sec) * 1_000_000 + UInt64(ts.tv_nsec) / 1000
    }
    return usec
  }

  /// Sends WATCHDOG=1 automatically when the service manager set WATCHDOG_USEC.
  public func enableWatchdog() throws(SystemError) {
    let rc = sd_event_set_watchdog(event, 1)
    guard rc >= 0 else { throw SystemError("sd_event_set_watchdog", errno: rc) }
  }

  /// Watches `fd` for `events`; the handler receives the events that occurred.
  public func watch(
    fd: Int32, events: IOEvents, handler: @escaping (IOEvents) -> Void
  ) throws(SystemError) -> IOWatcher {
    let box = Unmanaged.passRetained(CallbackBox(handler))
    var source: OpaquePointer?
    let rc = sd_event_add_io(
      event, &source, fd, events.rawValue,
      { _, _, revents, userdata in
        guard let userdata else { return 0 }
        let box = Unmanaged<CallbackBox<IOEvents>>.fromOpaque(userdata).takeUnretainedValue()
        box.handler(IOEvents(rawValue: revents))
        return 0
      }, box.toOpaque())
    return try IOWatcher(adopting: source, rc: rc, box: box, call: "sd_event_add_io")
  }

  /// Creates a timer on CLOCK_MONOTONIC, initially disarmed; arm it with `schedule(after:)`.
  ///
  /// - Parameter accuracy: the slack sd-event may add to coalesce wake-ups. Pass it
  ///   explicitly: sd-event's default of 250 ms is far too coarse for keepalives.
  public func makeTimer(accuracy: Microseconds = 1000, handler: @escaping () -> Void)
    throws(SystemError) -> Timer
  {
    let box = Unmanaged.passRetained(CallbackBox<Void>(handler))
    var source: OpaquePointer?
    let rc = sd_event_add_time_relative(
      event, &source, CLOCK_MONOTONIC, UInt64.max / 2, accuracy,
      { _, _, userdata in
        guard let userdata else { return 0 }
        Unmanaged<CallbackBox<Void>>.fromOpaque(userdata).takeUnretainedValue().handler(())
        return 0
      }, box.toOpaque())
    let timer = try Timer(adopting: source, rc: rc, box: box, call: "sd_event_add_time_relative")
    timer.disarm()
    return timer
  }

  /// Handles signal `signo` through a signalfd; the signal is blocked for normal delivery.
  public func onSignal(_ signo: Int32, handler: @escaping () -> Void) throws(SystemError)
    -> SignalWatcher
  {
    let box = Unmanaged.passRetained(CallbackBox<Void>(handler))
    var source: OpaquePointer?
    let rc = sd_event_add_signal(
      event, &source, chatlink_sd_event_signal_procmask(signo),
      { _, _, userdata in
        guard let userdata else { return 0 }
        Unmanaged<CallbackBox<Void>>.fromOpaque(userdata).takeUnretainedValue().handler(())
        return 0
      }, box.toOpaque())
    return try SignalWatcher(adopting: source, rc: rc, box: box, call: "sd_event_add_signal")
  }

  /// Runs `handler` once, on the next loop iteration, before waiting for new events.
  public func post(_ handler: @escaping () -> Void) {
    let box = Unmanaged.passRetained(CallbackBox<Void>(handler))
    var source: OpaquePointer?
    let rc = sd_event_add_defer(
      event, &source,
      { source, userdata in
        if let userdata {
          Unmanaged<CallbackBox<Void>>.fromOpaque(userdata).takeUnretainedValue().handler(())
        }
        // One-shot: disabling and dropping our reference destroys the source (and the box).
        sd_event_source_disable_unref(source)
        return 0
      }, box.toOpaque())
    guard rc >= 0, let source else {
      box.release()
      return
    }
    // The defer callback owns the only reference; the destroy callback frees the box.
    sd_event_source_set_destroy_callback(source) { userdata in
      if let userdata { Unmanaged<AnyObject>.fromOpaque(userdata).release() }
    }
  }
}

/// Keeps a Swift closure alive for as long as its sd-event source lives.
final class CallbackBox<Argument> {
  let handler: (Argument) -> Void
  init(_ handler: @escaping (Argument) -> Void) { self.handler = handler }
}
