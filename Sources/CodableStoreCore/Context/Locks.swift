#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A value behind a POSIX mutex, for the store's shared state (reader pool, observers), in every module of the
/// package (the PostgreSQL backend's connections too).
///
/// Not `Synchronization.Mutex`: on Linux it is a futex that ThreadSanitizer cannot see, so it reported races on
/// correct uses (checked with a pool taken and refilled by four threads: Mutex reported races, a pthread mutex
/// none), which hid real findings; and it needs macOS 15, above the package's minimum.
///
/// For a lock that guards no value, use ``Monitor``, not `Locked(())`: an empty stored property of a generic class
/// lies at offset 0, where the object's metadata pointer is, and ThreadSanitizer takes `withLock`'s `inout` access
/// of it for a write of that pointer, which every other thread reads before it takes the lock. It reported that as
/// a race on the store's writer lock (swiftlang/swift#72487); nothing is written there.
package final class Locked<Value: Sendable>: @unchecked Sendable {
    // @unchecked: `value` is only reached inside `withLock`, holding the mutex.
    private let monitor = Monitor()
    private var value: Value

    package init(_ value: Value) { self.value = value }

    /// Runs `body` with the value, holding the mutex.
    package func withLock<T>(_ body: (inout Value) throws -> T) rethrows -> T {
        try monitor.withLock { try body(&value) }
    }
}

/// A mutex with a condition: under ``Locked``, and what an import's ``Worker`` threads wait on. POSIX, because `Synchronization.Mutex` needs macOS 15 and the package
/// supports macOS 14.
package final class Monitor: @unchecked Sendable {
    // Allocated: the address of a stored property is not guaranteed stable, and pthread objects must not move.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

    init() {
        mutex.initialize(to: pthread_mutex_t())
        condition.initialize(to: pthread_cond_t())
        // Error-checking: taking it again on the thread that holds it (a `store.read` inside `store.write` on an
        // in-memory store, a nested `write`) stops with a message instead of hanging.
        var attributes = pthread_mutexattr_t()
        pthread_mutexattr_init(&attributes)
        pthread_mutexattr_settype(&attributes, Int32(PTHREAD_MUTEX_ERRORCHECK))
        pthread_mutex_init(mutex, &attributes)
        pthread_mutexattr_destroy(&attributes)
        pthread_cond_init(condition, nil)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    package func lock() {
        let result = pthread_mutex_lock(mutex)
        precondition(result == 0, result == EDEADLK ? Self.reentered : "pthread_mutex_lock failed (\(result))")
    }

    package func unlock() { pthread_mutex_unlock(mutex) }

    private static let reentered = """
        a CodableStore lock was taken again on the thread that holds it: a store's write (or read of an in-memory \
        store) inside another, or an import inside a write
        """

    /// Runs `body` holding the mutex.
    package func withLock<T>(_ body: () throws -> T) rethrows -> T {
        lock()
        defer { unlock() }
        return try body()
    }

    /// Waits for ``broadcast()``; call it holding the mutex, in a loop over the awaited condition.
    package func wait() { pthread_cond_wait(condition, mutex) }

    /// Waits for ``broadcast()`` while `condition` holds (call it holding the mutex), and returns the wall-clock
    /// seconds it waited: 0, without reading the clock, when the condition did not hold.
    @discardableResult
    package func wait(while condition: () -> Bool) -> Double {
        guard condition() else { return 0 }
        let start = monotonicSeconds()
        repeat { wait() } while condition()
        return monotonicSeconds() - start
    }

    package func broadcast() { pthread_cond_broadcast(condition) }
}
