import CSystem
@preconcurrency import Glibc

/// A thread for work that may block (DNS lookups, fsync), whose results come back to the
/// loop through an eventfd the loop watches. Jobs and results are handed over, never shared.
public final class BackgroundWorker {
  private let shared: WorkerShared
  private var wakeWatcher: IOWatcher?
  private var completions: [UInt64: (any Sendable) -> Void] = [:]
  private var nextID: UInt64 = 1

  /// Starts the thread and watches its completion fd on `loop`.
  public init(loop: EventLoop, name: String) throws(SystemError) {
    shared = try WorkerShared(name: name)
    wakeWatcher = try loop.watch(fd: shared.doneFD, events: .readable) { [unowned self] _ in
      self.drainCompletions()
    }
    try shared.start()
  }

  deinit {
    wakeWatcher?.cancel()
    shared.stop()
  }

  /// Jobs submitted whose completion has not run yet.
  public var pendingCount: Int { completions.count }

  /// Runs `work` on the worker thread, then `completion` with its result on the loop.
  public func submit<Result: Sendable>(
    _ work: @escaping @Sendable () -> Result, completion: @escaping (Result) -> Void
  ) {
    let id = nextID
    nextID += 1
    completions[id] = { value in
      if let value = value as? Result { completion(value) }
    }
    shared.enqueue(id: id, work: work)
  }

  private func drainCompletions() {
    for (id, value) in shared.takeResults() {
      completions.removeValue(forKey: id)?(value)
    }
  }
}

/// The part of a worker both threads touch: two queues under one lock and two eventfds.
private final class WorkerShared: Sendable {
  private struct Queues: Sendable {
    var jobs: [(UInt64, @Sendable () -> any Sendable)] = []
    var results: [(UInt64, any Sendable)] = []
    var stopping = false
  }

  let name: String
  /// Counts jobs for the worker thread, which blocks reading it.
  let jobFD: Int32
  /// Counts results for the loop, which watches it.
  let doneFD: Int32
  private let queues = ThreadLock(Queues())

  init(name: String) throws(SystemError) {
    self.name = name
    let jobs = eventfd(0, Int32(EFD_CLOEXEC))
    guard jobs >= 0 else { throw SystemError.last("eventfd") }
    let done = eventfd(0, Int32(EFD_CLOEXEC | EFD_NONBLOCK))
    guard done >= 0 else {
      close(jobs)
      throw SystemError.last("eventfd")
    }
    jobFD = jobs
    doneFD = done
  }

  deinit {
    close(jobFD)
    close(doneFD)
  }

  func start() throws(SystemError) {
    let context = Unmanaged.passRetained(self).toOpaque()
    var thread = pthread_t()
    let rc = pthread_create(
      &thread, nil,
      { context in
        guard let context else { return nil }
        let shared = Unmanaged<WorkerShared>.fromOpaque(context).takeRetainedValue()
        shared.runThread()
        return nil
      }, context)
    guard rc == 0 else {
      Unmanaged<WorkerShared>.fromOpaque(context).release()
      throw SystemError("pthread_create", errno: rc)
    }
    pthread_detach(thread)
  }

  func enqueue<Result: Sendable>(id: UInt64, work: @escaping @Sendable () -> Result) {
    queues.withLock { $0.jobs.append((id, { work() })) }
    var one: UInt64 = 1
    _ = write(jobFD, &one, 8)
  }

  func takeResults() -> [(UInt64, any Sendable)] {
    var counter: UInt64 = 0
    _ = read(doneFD, &counter, 8)
    return queues.withLock { queues in
      defer { queues.results = [] }
      return queues.results
    }
  }

  /// Asks the thread to finish; a job blocked in the kernel finishes first, unobserved.
  func stop() {
    queues.withLock { $0.stopping = true }
    var one: UInt64 = 1
    _ = write(jobFD, &one, 8)
  }

  private func runThread() {
    // Signals belong to the loop thread's signalfd; never let one land here.
    var all = sigset_t()
    sigfillset(&all)
    pthread_sigmask(SIG_BLOCK, &all, nil)
    // Named so `top -H` and core dumps say what the thread is for.
    _ = name.withCString { chatlink_set_thread_name($0) }
    while true {
      var counter: UInt64 = 0
      let n = read(jobFD, &counter, 8)
      if n < 0 && errno == EINTR { continue }
      let (jobs, stopping) = queues.withLock { queues in
        defer { queues.jobs = [] }
        return (queues.jobs, queues.stopping)
      }
      if stopping { return }
      for (id, job) in jobs {
        let result = job()
        queues.withLock { $0.results.append((id, result)) }
        var one: UInt64 = 1
        _ = write(doneFD, &one, 8)
      }
    }
  }
}
