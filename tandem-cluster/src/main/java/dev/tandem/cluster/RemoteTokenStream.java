package dev.tandem.cluster;

import dev.tandem.Outcome;
import dev.tandem.Status;
import dev.tandem.StreamTerminatedException;
import dev.tandem.Token;
import dev.tandem.TokenStream;
import dev.tandem.cluster.WorkerDirectory.Worker;
import dev.tandem.cluster.WorkerProtocol.Accepted;
import dev.tandem.cluster.WorkerProtocol.Generate;
import dev.tandem.cluster.WorkerProtocol.Rejected;
import dev.tandem.cluster.WorkerProtocol.Reply;
import dev.tandem.llm.GenerateOptions;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.Arrays;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Flow;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.javadsl.AskPattern;
import org.apache.pekko.stream.javadsl.Sink;
import org.apache.pekko.stream.javadsl.SinkQueueWithCancel;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The tokens of one request that runs on a worker of the cluster, read on the gateway; when the
 * worker is lost mid-stream the request goes on, on another worker, from the tokens already read.
 *
 * <h2>Implementation Overview</h2>
 * An <em>attempt</em> is one admission on one worker: the worker's {@code SourceRef} of token ids
 * materialized into a pull queue here ({@code Sink.queue}, which asks upstream for more only as
 * tokens are pulled, so the reader's pace is the worker's). The reader (one thread, the one
 * iterating) pulls from the current attempt and waits on three things at once: the pull, the
 * attempt's {@code lost} signal (completed from the gateway actor when the failure detector holds
 * the attempt's node unreachable or the node is removed), and {@code cancelled}.
 *
 * <p>Invariants:
 * <ul>
 *   <li>{@code delivered} holds exactly the token ids handed to the reader, in order; only the
 *       reader appends to it, and it appends a token only after pulling it from the current
 *       attempt. A lost attempt's queue is cancelled before the next attempt starts, so a token
 *       of a dead attempt is never delivered after the resumed one's (no token twice).</li>
 *   <li>A resumed attempt prefills the prompt and {@code delivered}, and generates what was left
 *       ({@link Resumption}): its first token is the original's token {@code delivered.length},
 *       so no token is lost and the text is that of an uninterrupted run.</li>
 *   <li>{@code outcome} completes once, by whoever ends the stream first: the reader (the worker's
 *       stream ended: COMPLETED; a deadline; no worker to resume on: FAILED) or {@link #cancel()}
 *       (CANCELLED). Once it is complete the reader only reports it.</li>
 *   <li>{@link #cancel()} cancels the current attempt's queue, which cancels the request on its
 *       worker (the StreamRef carries the cancellation upstream). An attempt installed after a
 *       cancel (a resume racing with it) is cancelled by the reader at once.</li>
 * </ul>
 * A worker that fails its stream without its node being lost (it drained, or its request failed)
 * is treated as lost too, and is not offered this request again.
 */
final class RemoteTokenStream implements TokenStream {
    private static final Logger log = LoggerFactory.getLogger(RemoteTokenStream.class);
    private static final Token TIMED_OUT = new Token(-1, -1, new byte[4]);

    private final long id;
    private final int[] prompt;
    private final GenerateOptions options;
    private final long key;
    private final long submitted = System.nanoTime();
    private final long deadline;
    private final ClusterEngine engine;
    private final CompletableFuture<Outcome> outcome = new CompletableFuture<>();
    private final CompletableFuture<Void> cancelled = new CompletableFuture<>();
    private final AtomicBoolean subscribed = new AtomicBoolean();
    private final AtomicBoolean reservation;

    // The reader's own state.
    private int[] delivered = new int[16];
    private volatile int deliveredCount;
    private long firstToken;
    private final Set<ActorRef<WorkerProtocol.Command>> avoid = new HashSet<>();
    private int resumes;
    /** Whether a worker has admitted it once (a later placement is a resumption). */
    private boolean placed;
    private long lostAt;
    private Throwable lostCause;

    /** The attempt that runs now; null between a loss and the resumption. */
    private volatile Attempt attempt;

    /** One admission on one worker. */
    private static final class Attempt {
        final Worker worker;
        final CompletableFuture<Void> lost;
        final Runnable unregister;
        SinkQueueWithCancel<Integer> queue;
        CompletableFuture<Optional<Integer>> pending;
        long lostAt;

        Attempt(Worker worker, WorkerDirectory directory) {
            this.worker = worker;
            this.lost = new CompletableFuture<>();
            this.unregister = directory.onLost(address -> {
                if (address.equals(worker.address()) && !lost.isDone()) {
                    lostAt = System.nanoTime();
                    lost.complete(null);
                }
            });
        }

        void end() {
            unregister.run();
            if (queue != null) {
                queue.cancel();
            }
        }
    }

    /**
     * A request not yet offered to a worker: its reader does that on its first read.
     *
     * @param reserved whether it holds one of the gateway's waiting places (every worker was full),
     *                 given back once it is placed or has ended
     */
    RemoteTokenStream(long id, int[] prompt, GenerateOptions options, Duration deadline, ClusterEngine engine,
            boolean reserved) {
        this.reservation = new AtomicBoolean(reserved);
        this.id = id;
        this.prompt = prompt.clone();
        this.options = Objects.requireNonNull(options, "options");
        this.key = Routing.prefixKey(prompt);
        this.deadline = deadline == null ? Long.MAX_VALUE : submitted + deadline.toNanos();
        this.engine = engine;
    }

    /** Why the last {@link #admit} found no worker. */
    private String refusal = "";

    /**
     * The first attempt that a worker admits, in routing order, or null ({@link #refusal} says why).
     *
     * @throws IllegalArgumentException when a worker finds the prompt too long for its context
     */
    private Attempt admit(int[] tokens, GenerateOptions opts) throws InterruptedException {
        WorkerDirectory directory = engine.directory();
        String model = engine.model().name();
        List<Worker> eligible = directory.eligible(model, engine.fingerprint()); // never another file's workers
        eligible.removeIf(w -> avoid.contains(w.ref()));
        List<Worker> order = Routing.order(key, eligible, Worker::identity, w -> w.load().utilisation(),
                w -> w.load().saturated());
        Worker affine = placed ? null : Routing.affine(key, eligible, Worker::identity);
        refusal = order.isEmpty() ? "no reachable worker serves the model '" + model + "'" : "no worker answered";
        for (Worker w : order) {
            Attempt a = new Attempt(w, directory);
            long left = deadline - System.nanoTime();
            Reply reply;
            try {
                engine.stats.forwarded();
                reply = AskPattern.<WorkerProtocol.Command, Reply>ask(w.ref(),
                        replyTo -> new Generate(id, tokens, opts, deadline == Long.MAX_VALUE ? 0
                                : Math.max(1, TimeUnit.NANOSECONDS.toMillis(left)), replyTo),
                        engine.settings().askTimeout(), engine.system().scheduler())
                        .toCompletableFuture().get();
            } catch (ExecutionException e) {
                a.end();
                log.debug("request {}: worker {} did not answer: {}", id, w.address(), e.getCause().toString());
                continue;
            } catch (InterruptedException e) {
                a.end();
                throw e;
            }
            switch (reply) {
                case Accepted accepted -> {
                    a.queue = accepted.tokens().getSource().runWith(Sink.queue(), engine.materializer());
                    engine.stats.routed(model, w.address().toString(), placed ? null : w.ref().equals(affine.ref()));
                    log.debug("request {} runs on {} ({} prompt tokens)", id, w.address(), tokens.length);
                    return a;
                }
                case Rejected r when Rejected.PROMPT.equals(r.reason()) -> {
                    a.end();
                    throw new IllegalArgumentException(r.message());
                }
                case Rejected r -> {
                    a.end();
                    refusal = "every worker refused it; the last said " + r.reason() + ": " + r.message();
                }
            }
        }
        return null;
    }

    @Override
    public long requestId() {
        return id;
    }

    @Override
    public Iterator<Token> iterator() {
        return new Iterator<>() {
            private Token next;
            private boolean ended;

            @Override
            public boolean hasNext() {
                if (next != null) {
                    return true;
                }
                if (ended) {
                    return false;
                }
                try {
                    next = read(-1);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    cancel();
                    throw new StreamTerminatedException(outcome.join());
                }
                ended = next == null;
                return !ended;
            }

            @Override
            public Token next() {
                if (!hasNext()) {
                    throw new NoSuchElementException();
                }
                Token t = next;
                next = null;
                return t;
            }
        };
    }

    @Override
    public Token poll(Duration timeout) throws InterruptedException {
        Token t = read(Math.max(0, timeout.toNanos()));
        return t == TIMED_OUT ? null : t;
    }

    @Override
    public CompletableFuture<Outcome> completion() {
        return outcome.copy();
    }

    @Override
    public void cancel() {
        if (cancelled.complete(null)) {
            Attempt a = attempt;
            if (a != null) {
                a.end();
            }
            finish(Status.CANCELLED, null);
        }
    }

    @Override
    public boolean isDone() {
        return outcome.isDone();
    }

    /**
     * The next token; null after the last of a completed request; {@link #TIMED_OUT} when
     * {@code timeoutNanos} (negative: none) passed first.
     *
     * @throws StreamTerminatedException when the request ended other than COMPLETED
     */
    private Token read(long timeoutNanos) throws InterruptedException {
        long until = timeoutNanos < 0 ? Long.MAX_VALUE : System.nanoTime() + timeoutNanos;
        while (true) {
            if (outcome.isDone()) {
                Attempt a = attempt;
                if (a != null) {
                    a.end(); // after a cancel that raced with a resumption
                }
                Outcome o = outcome.join();
                if (o.status() == Status.COMPLETED) {
                    return null;
                }
                throw new StreamTerminatedException(o);
            }
            Attempt a = attempt;
            if (a == null) {
                place();
                continue;
            }
            if (a.pending == null) {
                a.pending = a.queue.pull().toCompletableFuture();
            }
            long now = System.nanoTime();
            long wait = Math.min(until, deadline) - now;
            try {
                if (wait <= 0) {
                    throw new TimeoutException();
                }
                CompletableFuture.anyOf(a.pending, a.lost, cancelled).get(wait, TimeUnit.NANOSECONDS);
            } catch (TimeoutException e) {
                if (System.nanoTime() - deadline >= 0) {
                    a.end();
                    finish(Status.DEADLINE_EXCEEDED, null);
                    continue;
                }
                return TIMED_OUT;
            } catch (ExecutionException e) {
                // the pull failed: handled below
            }
            if (cancelled.isDone()) {
                continue;
            }
            if (a.pending.isDone() && !a.pending.isCompletedExceptionally()) {
                Optional<Integer> token = a.pending.join();
                a.pending = null;
                if (token.isEmpty()) {
                    a.unregister.run();
                    finish(Status.COMPLETED, null);
                    return null;
                }
                return deliver(token.get());
            }
            lose(a);
        }
    }

    private Token deliver(int token) {
        int n = deliveredCount;
        if (n == delivered.length) {
            delivered = Arrays.copyOf(delivered, n * 2);
        }
        delivered[n] = token;
        deliveredCount = n + 1;
        long now = System.nanoTime();
        if (firstToken == 0) {
            firstToken = now;
        }
        if (lostAt != 0) {
            long took = now - lostAt;
            engine.stats.resumed(engine.model().name(), took);
            log.info("request {} resumed: token {} arrived {} ms after its worker was lost", id, n,
                    TimeUnit.NANOSECONDS.toMillis(took));
            lostAt = 0;
        }
        byte[] bytes = ByteBuffer.allocate(Integer.BYTES).order(ByteOrder.LITTLE_ENDIAN).putInt(token).array();
        return new Token(id, n, bytes);
    }

    /** The attempt's stream failed or its node was lost: end it; the next read resumes. */
    private void lose(Attempt a) {
        Throwable cause = a.pending != null && a.pending.isCompletedExceptionally()
                ? a.pending.handle((v, e) -> e).join() : null;
        long at = a.lost.isDone() ? a.lostAt : System.nanoTime();
        a.end();
        attempt = null;
        avoid.add(a.worker.ref());
        engine.stats.failover(engine.model().name(), a.worker.address().toString());
        if (lostAt == 0) {
            lostAt = at;
        }
        lostCause = cause != null ? cause : new IllegalStateException("node " + a.worker.address() + " unreachable");
        log.info("request {} lost worker {} after {} tokens: {}", id, a.worker.address(), deliveredCount,
                a.lost.isDone() ? "its node is unreachable" : String.valueOf(cause));
    }

    /**
     * Offers the request, or what is left of it after a loss, to the workers; while none takes it,
     * waits for the directory's next change, within the admission (or resume) timeout.
     */
    private void place() throws InterruptedException {
        boolean first = !placed;
        if (!first && resumes >= engine.settings().maxResumes()) {
            finish(Status.FAILED, new IllegalStateException("request " + id + " lost " + resumes
                    + " workers; not resumed again", lostCause));
            return;
        }
        int d = deliveredCount;
        int[] tokens = prompt;
        GenerateOptions rest = options;
        if (d > 0) {
            try {
                tokens = Resumption.prompt(prompt, Arrays.copyOf(delivered, d));
                rest = Resumption.options(options, d);
            } catch (IllegalArgumentException e) {
                finish(Status.FAILED, e);
                return;
            }
        }
        Duration timeout = first ? engine.settings().admissionTimeout() : engine.settings().resumeTimeout();
        long until = Math.min(deadline, System.nanoTime() + timeout.toNanos());
        while (!outcome.isDone()) {
            CompletableFuture<Void> changed = engine.directory().changed();
            Attempt a;
            try {
                a = admit(tokens, rest);
            } catch (IllegalArgumentException e) {
                finish(Status.FAILED, e);
                return;
            }
            if (a != null) {
                if (!first) {
                    resumes++;
                    log.info("request {} resumes on {} from token {}", id, a.worker.address(), d);
                }
                placed = true;
                attempt = a;
                releaseReservation();
                return;
            }
            long wait = until - System.nanoTime();
            if (wait <= 0) {
                finish(System.nanoTime() - deadline >= 0 ? Status.DEADLINE_EXCEEDED : Status.FAILED,
                        new IllegalStateException("request " + id + ": no worker took it within " + timeout
                                + (first ? "" : " after its worker was lost") + " (" + refusal + ")",
                                lostCause));
                return;
            }
            try {
                CompletableFuture.anyOf(changed, cancelled).get(wait, TimeUnit.NANOSECONDS);
            } catch (TimeoutException | ExecutionException e) {
                // looked again at the top
            }
        }
    }

    private void releaseReservation() {
        if (reservation.compareAndSet(true, false)) {
            engine.releaseWaiting();
        }
    }

    private void finish(Status status, Throwable cause) {
        releaseReservation();
        long now = System.nanoTime();
        outcome.complete(new Outcome(id, status, cause, deliveredCount, Duration.ZERO,
                firstToken == 0 ? null : Duration.ofNanos(firstToken - submitted), Duration.ofNanos(now - submitted)));
    }

    /**
     * One subscriber: a virtual thread reads as the iterator does and hands tokens over against
     * its demand; cancelling the subscription cancels the request.
     */
    @Override
    public void subscribe(Flow.Subscriber<? super Token> subscriber) {
        Objects.requireNonNull(subscriber, "subscriber");
        if (!subscribed.compareAndSet(false, true)) {
            subscriber.onSubscribe(new Flow.Subscription() {
                @Override
                public void request(long n) {}

                @Override
                public void cancel() {}
            });
            subscriber.onError(new IllegalStateException("request " + id + " already has a subscriber"));
            return;
        }
        Semaphore demand = new Semaphore(0);
        AtomicBoolean gone = new AtomicBoolean();
        Thread pump = Thread.ofVirtual().name("tandem-cluster-stream-" + id).unstarted(() -> {
            try {
                while (true) {
                    demand.acquire();
                    if (gone.get()) {
                        return;
                    }
                    Token t = read(-1);
                    if (t == null) {
                        subscriber.onComplete();
                        return;
                    }
                    subscriber.onNext(t);
                }
            } catch (StreamTerminatedException e) {
                if (!gone.get()) {
                    subscriber.onError(e);
                }
            } catch (InterruptedException e) {
                cancel();
            }
        });
        subscriber.onSubscribe(new Flow.Subscription() {
            @Override
            public void request(long n) {
                if (n <= 0) {
                    gone.set(true);
                    RemoteTokenStream.this.cancel();
                    subscriber.onError(new IllegalArgumentException("request(" + n + "): demand must be positive"));
                    demand.release();
                    return;
                }
                demand.release((int) Math.min(n, Integer.MAX_VALUE / 2));
            }

            @Override
            public void cancel() {
                gone.set(true);
                RemoteTokenStream.this.cancel();
                demand.release();
            }
        });
        pump.start();
    }
}
