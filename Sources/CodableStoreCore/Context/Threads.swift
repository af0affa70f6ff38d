#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A helper thread of an import (the reader of ``RecordPipeline``, the writer of ``WriteBehind``) and the monitor
/// that guards what it shares with the importer's thread.
///
/// The owner starts it once with its loop, and ``finish(dropping:)`` ends it from the importer's side: it marks it
/// stopping (the loop sees ``isStopping`` under the monitor and returns), lets the owner drop the work still
/// queued, wakes every waiter, joins the thread and keeps the CPU time it used. Safe to call more than once.
package final class Worker: @unchecked Sendable {
    // @unchecked: `stopping` is read and written under `monitor`; `thread` and `cpuSeconds` only by the owner's
    // thread (the worker's own thread never touches them).
    package let monitor = Monitor()
    private var stopping = false
    private var thread: JoinableThread?
    /// The CPU time the thread used, in seconds, once ``finish(dropping:)`` joined it.
    package private(set) var cpuSeconds = 0.0

    package init() {}

    deinit {
        precondition(thread == nil, "an import's worker thread was released while it runs: call finish()")
    }

    /// Whether the importer stopped the worker: its loop should return. Read it holding ``monitor``.
    package var isStopping: Bool { stopping }

    /// Starts `body` on a new thread.
    package func start(_ body: @escaping @Sendable () -> Void) throws(ThreadStartError) {
        precondition(thread == nil, "a worker runs one thread")
        thread = try JoinableThread(body)
    }

    /// Stops the thread and waits for it to end; `dropQueued` runs under the monitor first, to drop the work not
    /// started yet.
    package func finish(dropping dropQueued: () -> Void = {}) {
        monitor.withLock {
            stopping = true
            dropQueued()
            monitor.broadcast()
        }
        if let thread { cpuSeconds += thread.join() }
        thread = nil
    }
}

/// Seconds on the monotonic clock, for measuring how long something took (an import, a wait).
package func monotonicSeconds() -> Double { seconds(on: CLOCK_MONOTONIC) }

/// The CPU time the calling thread has used, in seconds.
package func threadCPUSeconds() -> Double { seconds(on: CLOCK_THREAD_CPUTIME_ID) }

private func seconds(on clock: clockid_t) -> Double {
    var time = timespec()
    guard clock_gettime(clock, &time) == 0 else { return 0 }
    return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
}

/// A joinable POSIX thread running a closure.
struct JoinableThread {
    #if canImport(Glibc)
    private let thread: pthread_t
    #else
    private let thread: pthread_t?
    #endif
    private let job: Job

    /// `@unchecked Sendable`: `cpuSeconds` is written by the thread as it ends and read after `pthread_join`,
    /// which orders the two.
    private final class Job: @unchecked Sendable {
        let body: @Sendable () -> Void
        var cpuSeconds = 0.0
        init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }

    /// Starts `body` on a new thread; throws the `pthread_create` status when it fails.
    init(_ body: @escaping @Sendable () -> Void) throws(ThreadStartError) {
        let job = Job(body)
        self.job = job
        let argument = Unmanaged.passRetained(job).toOpaque()
        // Glibc's pthread_t is an integer; Darwin's and Musl's are pointers, imported as optionals here.
        #if canImport(Glibc)
        var created = pthread_t()
        #else
        var created: pthread_t? = nil
        #endif
        let status = pthread_create(
            &created, nil,
            { argument in
                // Optional on Glibc and Musl, not on Darwin: the cast makes one spelling work on all of them.
                let job = Unmanaged<Job>.fromOpaque((argument as UnsafeMutableRawPointer?)!).takeRetainedValue()
                job.body()
                job.cpuSeconds = threadCPUSeconds()
                return nil
            }, argument)
        guard status == 0 else {
            Unmanaged<Job>.fromOpaque(argument).release()
            throw ThreadStartError(code: status)
        }
        thread = created
    }

    /// Waits for the thread to end; returns the CPU time it used, in seconds.
    @discardableResult
    func join() -> Double {
        #if canImport(Glibc)
        pthread_join(thread, nil)
        #else
        if let thread { pthread_join(thread, nil) }
        #endif
        return job.cpuSeconds
    }
}

/// `pthread_create` failed (`EAGAIN`: the system's thread limit).
package struct ThreadStartError: Error {
    package let code: Int32
}
