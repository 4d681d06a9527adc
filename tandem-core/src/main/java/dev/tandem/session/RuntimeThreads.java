package dev.tandem.session;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The virtual threads one worker runs user code on, besides its cores: each request's program
 * thread, its delivery threads (hand-over of finished steps, {@code stopWhen}), its stream's
 * subscriber threads and its teardown. Every one of them is started here and tracked until it
 * ends, so the worker can tell its own threads from its callers' (a blocking call made on one
 * of them must not wait on itself) and a test can see a leaked one.
 *
 * <p>A thread is added to {@code live} before it starts and removes itself as its last action,
 * so {@link #isRuntimeThread} is exact for the calling thread and {@link #live} holds every
 * thread that may still run runtime or user code.
 */
final class RuntimeThreads {
    private final String prefix;
    private final Set<Thread> live = ConcurrentHashMap.newKeySet();

    /** @param prefix the worker's name, the prefix of every thread's name */
    public RuntimeThreads(String prefix) {
        this.prefix = prefix;
    }

    /** Starts {@code body} on a new tracked virtual thread named {@code prefix + "-" + suffix}. */
    public Thread start(String suffix, Runnable body) {
        Thread thread = Thread.ofVirtual().name(prefix + "-" + suffix).unstarted(new Runnable() {
            @Override
            public void run() {
                try {
                    body.run();
                } finally {
                    live.remove(Thread.currentThread());
                }
            }
        });
        live.add(thread);
        thread.start();
        return thread;
    }

    /** Whether the calling thread is one of these threads. */
    public boolean isRuntimeThread() {
        Thread current = Thread.currentThread();
        return current.isVirtual() && live.contains(current);
    }

    /** A snapshot of the threads that have not ended. */
    public Set<Thread> live() {
        return Set.copyOf(live);
    }

    /** The name prefix of these threads. */
    public String prefix() {
        return prefix;
    }
}
