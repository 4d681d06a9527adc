package dev.tandem.device;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tandem.Kernel;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.BrokenBarrierException;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Stress tests of {@link ReadyQueue} on real platform threads: producers push fresh tasks
 * (a task enters a queue once in its life), consumers poll; every task must come out exactly
 * once, and the tasks of one producer on one lane in the order they were pushed. Two kinds: a
 * long run moving a million tasks, and jcstress-style races on fresh queues ({@link Races}),
 * whose outcomes are classified ACCEPTABLE or FORBIDDEN.
 *
 * <p>{@code -Dtandem.long=true} multiplies the counts by 10.
 */
@Timeout(value = 30, unit = TimeUnit.MINUTES) // a last resort: the tests' own deadlines fail them first
class ReadyQueueStressTest {

    static final boolean LONG = Boolean.getBoolean("tandem.long");
    static final int SCALE = LONG ? 10 : 1;
    /** How long a test may wait for progress before it fails (rather than hangs). */
    static final long PATIENCE_NANOS = LONG ? TimeUnit.MINUTES.toNanos(10) : TimeUnit.SECONDS.toNanos(60);

    static final Kernel NOOP = Kernel.of("noop", c -> { });

    static TaskNode task(long id, int lane) {
        TaskNode task = new TaskNode(NOOP, null, null, null, id, null);
        task.lane = lane;
        return task;
    }

    /**
     * Two producers and two consumers move 1,000,000 tasks over two lanes, one producer a task
     * at a time, the other in runs of 1 to 8 ({@link ReadyQueue#pushAll}). A task's index
     * encodes its producer and its sequence number; each consumer checks that, per producer and
     * lane, sequence numbers only grow (FIFO per lane, as seen by one consumer), and marks each
     * task received; the marks of both consumers must cover every task exactly once.
     */
    @Test
    void twoProducersTwoConsumersMoveAMillionTasksEachExactlyOnce() throws InterruptedException {
        int producers = 2;
        int consumers = 2;
        int lanes = 2;
        int perProducer = 500_000 * SCALE;
        int total = producers * perProducer;
        ReadyQueue queue = new ReadyQueue(lanes);
        AtomicInteger received = new AtomicInteger();
        AtomicReference<String> failure = new AtomicReference<>();
        byte[][] marks = new byte[consumers][total];
        CyclicBarrier start = new CyclicBarrier(producers + consumers);
        long deadline = System.nanoTime() + PATIENCE_NANOS;
        List<Thread> threads = new ArrayList<>();
        for (int p = 0; p < producers; p++) {
            int producer = p;
            threads.add(Thread.ofPlatform().name("producer-" + p).daemon().start(() -> {
                SplittableRandom random = new SplittableRandom(producer);
                try {
                    start.await();
                    if (producer == 0) {
                        for (int seq = 0; seq < perProducer; seq++) {
                            queue.push(task((long) producer * perProducer + seq, random.nextInt(lanes)));
                        }
                    } else {
                        // Runs of 1 to 8 tasks of one lane, each run appended with one CAS.
                        TaskNode[] run = new TaskNode[8];
                        for (int seq = 0; seq < perProducer; ) {
                            int lane = random.nextInt(lanes);
                            int n = Math.min(1 + random.nextInt(run.length), perProducer - seq);
                            for (int i = 0; i < n; i++) {
                                run[i] = task((long) producer * perProducer + seq++, lane);
                            }
                            queue.pushAll(run, 0, n, lane);
                        }
                    }
                } catch (InterruptedException | BrokenBarrierException | RuntimeException e) {
                    failure.compareAndSet(null, Thread.currentThread().getName() + ": " + e);
                }
            }));
        }
        for (int c = 0; c < consumers; c++) {
            byte[] mine = marks[c];
            threads.add(Thread.ofPlatform().name("consumer-" + c).daemon().start(() -> {
                long[][] lastSeq = new long[producers][lanes];
                for (long[] row : lastSeq) {
                    java.util.Arrays.fill(row, -1);
                }
                long empty = 0;
                try {
                    start.await();
                    while (received.get() < total && failure.get() == null) {
                        TaskNode task = queue.poll();
                        if (task == null) {
                            if (++empty % 1024 == 0 && System.nanoTime() - deadline > 0) {
                                failure.compareAndSet(null, "timed out: " + received.get() + " of " + total + " received");
                            }
                            Thread.onSpinWait();
                            continue;
                        }
                        received.incrementAndGet();
                        int id = (int) task.index();
                        int producer = id / perProducer;
                        int seq = id % perProducer;
                        if (mine[id]++ != 0) {
                            failure.compareAndSet(null, "task " + id + " received twice by " + Thread.currentThread().getName());
                        }
                        if (seq <= lastSeq[producer][task.lane]) {
                            failure.compareAndSet(null, "producer " + producer + "'s task " + seq + " on lane " + task.lane
                                    + " received after its task " + lastSeq[producer][task.lane]);
                        }
                        lastSeq[producer][task.lane] = seq;
                    }
                } catch (InterruptedException | BrokenBarrierException | RuntimeException e) {
                    failure.compareAndSet(null, Thread.currentThread().getName() + ": " + e);
                }
            }));
        }
        for (Thread thread : threads) {
            thread.join(TimeUnit.NANOSECONDS.toMillis(PATIENCE_NANOS) + 10_000);
            assertThat(thread.isAlive()).as("%s finished (received %d of %d)", thread.getName(), received.get(), total)
                    .isFalse();
        }
        assertThat(failure.get()).isNull();
        int missing = 0;
        int duplicated = 0;
        for (int id = 0; id < total; id++) {
            int count = 0;
            for (byte[] mine : marks) {
                count += mine[id];
            }
            if (count == 0) {
                missing++;
            } else if (count > 1) {
                duplicated++;
            }
        }
        assertThat(missing).as("tasks never received").isZero();
        assertThat(duplicated).as("tasks received more than once").isZero();
        assertThat(received.get()).isEqualTo(total);
        assertThat(queue.isEmpty()).isTrue();
        assertThat(queue.poll()).isNull();
    }

    static final int RACES = 20_000 * SCALE;

    /** One race: a fresh one-lane queue, two fresh tasks, and what the actors polled. */
    static final class QueueRace {
        final ReadyQueue queue = new ReadyQueue(1);
        final TaskNode x = task(1, 0);
        final TaskNode y = task(2, 0);
        TaskNode polled1;
        TaskNode polled2;

        String name(TaskNode task) {
            return task == null ? "-" : task == x ? "x" : task == y ? "y" : "?";
        }

        /** The queue's remaining tasks in order, draining it. */
        String drain() {
            StringBuilder left = new StringBuilder("[");
            for (TaskNode task = queue.poll(); task != null; task = queue.poll()) {
                left.append(name(task));
            }
            return left.append(queue.isEmpty() ? "]" : "] not empty").toString();
        }
    }

    /**
     * Queue [x]; two actors poll once each.
     * <ul>
     *   <li>ACCEPTABLE {@code x - []}, {@code - x []}: exactly one poll gets x;
     *   <li>FORBIDDEN: both get x (a task run twice), neither does, x still queued after a
     *       poll returned it.
     * </ul>
     */
    @Test
    void twoPollersRaceForOneTask() throws InterruptedException {
        Races.run(RACES, PATIENCE_NANOS,
                () -> {
                    QueueRace race = new QueueRace();
                    race.queue.push(race.x);
                    return race;
                },
                race -> race.name(race.polled1) + " " + race.name(race.polled2) + " " + race.drain(),
                Set.of("x - []", "- x []")::contains,
                race -> race.polled1 = race.queue.poll(),
                race -> race.polled2 = race.queue.poll());
    }

    /**
     * Empty queue; one actor pushes x, the other polls once.
     * <ul>
     *   <li>ACCEPTABLE {@code x []} (the poll came after the push), {@code - [x]} (before it);
     *   <li>FORBIDDEN: x lost, x both polled and still queued, a poll returning anything else.
     * </ul>
     */
    @Test
    void pushRacesPollOnAnEmptyQueue() throws InterruptedException {
        Races.run(RACES, PATIENCE_NANOS, QueueRace::new,
                race -> race.name(race.polled1) + " " + race.drain(),
                Set.of("x []", "- [x]")::contains,
                race -> race.queue.push(race.x),
                race -> race.polled1 = race.queue.poll());
    }

    /**
     * Empty queue; two actors push x and y at once; then the queue is drained.
     * <ul>
     *   <li>ACCEPTABLE {@code [xy]}, {@code [yx]}: both linked, in either order;
     *   <li>FORBIDDEN: a task lost (one push overwrote the other's link) or duplicated.
     * </ul>
     */
    @Test
    void twoPushersRaceOnAnEmptyQueue() throws InterruptedException {
        Races.run(RACES, PATIENCE_NANOS, QueueRace::new,
                QueueRace::drain,
                Set.of("[xy]", "[yx]")::contains,
                race -> race.queue.push(race.x),
                race -> race.queue.push(race.y));
    }

    /**
     * Queue [y]; one actor pushes x while the other polls twice.
     * <ul>
     *   <li>ACCEPTABLE {@code y x []} (the second poll after the push), {@code y - [x]};
     *   <li>FORBIDDEN: x polled before y (FIFO broken), a task lost or duplicated.
     * </ul>
     */
    @Test
    void pushRacesThePollOfTheLastTask() throws InterruptedException {
        Races.run(RACES, PATIENCE_NANOS,
                () -> {
                    QueueRace race = new QueueRace();
                    race.queue.push(race.y);
                    return race;
                },
                race -> race.name(race.polled1) + " " + race.name(race.polled2) + " " + race.drain(),
                Set.of("y x []", "y - [x]")::contains,
                race -> race.queue.push(race.x),
                race -> {
                    race.polled1 = race.queue.poll();
                    race.polled2 = race.queue.poll();
                });
    }
}
