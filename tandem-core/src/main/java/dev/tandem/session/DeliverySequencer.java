package dev.tandem.session;

import dev.tandem.graph.Step;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;

/**
 * Hands the steps of one request to a consumer in step order, although they finish on any
 * thread in any order. Multi-producer (any core finishing a step), one consumer call at a time.
 *
 * <p>Implementation Overview. A finished step is stored in {@code ring[index % capacity]} with a
 * release store; then the thread increments {@code wip}. The thread that moved {@code wip} from
 * 0 starts the drainer on the sequencer's executor (the request's: a fresh virtual thread when
 * the producer is a core and the consumer would run user code, {@code stopWhen}; else inline). The drainer hands over consecutive steps from {@code next} while their slots
 * hold them, then subtracts the work it has seen from {@code wip} and drains again if others
 * signalled meanwhile (the "missed" loop). Handing the drain to another thread changes no
 * invariant: exactly one drain is started per move of {@code wip} from 0, and it ends only by
 * the decrement that returns it to 0. Invariants:
 * <ul>
 *   <li>at most one thread drains at a time, so {@code next} has a single writer and the
 *       consumer is never called concurrently;
 *   <li>each step is handed over exactly once, in index order with no gaps: a slot is
 *       cleared by the drainer before {@code next} moves past it;
 *   <li>a step stored after the drainer last looked at its slot is seen: its producer's
 *       {@code wip} increment happens after the store, and the drainer's decrement that
 *       returns zero happens after that increment or makes it return non-zero.
 * </ul>
 * The ring cannot overflow as long as fewer than {@code capacity} steps past {@code next} are
 * unfinished; the run-ahead gate guarantees that for a request.
 */
final class DeliverySequencer {
    private final Step[] ring;
    private final AtomicInteger wip = new AtomicInteger();
    private final Consumer<Step> consumer;
    private final Executor drainer;
    private volatile long next;

    /** A sequencer whose drain runs on the thread that finished the step which started it. */
    public DeliverySequencer(int inFlight, Consumer<Step> consumer) {
        this(inFlight, consumer, Runnable::run);
    }

    /**
     * @param inFlight the most steps past the next one to deliver that can be finished at once
     * @param consumer called with each step in order; called by one thread at a time; must
     *                 not throw (a throw would leave {@code wip} raised and stop delivery)
     * @param drainer  runs each drain: inline ({@code Runnable::run}) or on another thread
     */
    public DeliverySequencer(int inFlight, Consumer<Step> consumer, Executor drainer) {
        this.ring = new Step[Integer.highestOneBit(Math.max(1, inFlight)) << 1];
        this.consumer = consumer;
        this.drainer = drainer;
    }

    /** Index of the next step to hand over: the number handed over so far. */
    public long next() {
        return next;
    }

    /** A step finished; hands it and any that it unblocks over, in order. Any thread. */
    public void finished(Step step) {
        int mask = ring.length - 1;
        if (step.index() - next >= ring.length) {
            throw new IllegalStateException(step + " finished " + (step.index() - next)
                    + " steps ahead of delivery; the ring holds " + ring.length);
        }
        RING.setRelease(ring, (int) (step.index() & mask), step);
        if (wip.getAndIncrement() != 0) {
            return;
        }
        drainer.execute(this::drain);
    }

    private void drain() {
        int mask = ring.length - 1;
        int missed = 1;
        while (true) {
            while (true) {
                long index = next;
                int slot = (int) (index & mask);
                Step ready = (Step) RING.getAcquire(ring, slot);
                if (ready == null || ready.index() != index) {
                    break;
                }
                RING.setRelease(ring, slot, null);
                next = index + 1;
                consumer.accept(ready);
            }
            missed = wip.addAndGet(-missed);
            if (missed == 0) {
                return;
            }
        }
    }

    private static final VarHandle RING = MethodHandles.arrayElementVarHandle(Step[].class);
}
