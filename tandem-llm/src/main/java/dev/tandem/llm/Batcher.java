package dev.tandem.llm;

import dev.tandem.AdmissionRejectedException;
import dev.tandem.Orchestrator;
import dev.tandem.Outcome;
import dev.tandem.Program;
import dev.tandem.Region;
import dev.tandem.RunOptions;
import dev.tandem.Status;
import dev.tandem.StreamTerminatedException;
import dev.tandem.Token;
import dev.tandem.TokenFeed;
import dev.tandem.TokenStream;
import dev.tandem.Worker;
import dev.tandem.llm.engine.ForwardPass;
import dev.tandem.llm.engine.KvBlockPool;
import dev.tandem.llm.engine.Scheduler;
import dev.tandem.llm.engine.Sequence;
import dev.tandem.llm.engine.StepBuilder;
import dev.tandem.llm.engine.StepPlan;
import dev.tandem.llm.grammar.TokenGrammar;
import dev.tandem.llm.model.LlamaConfig;
import dev.tandem.llm.sampling.Sampler;
import dev.tandem.llm.sampling.TokenLogprobs;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Flow;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Continuous batching: one long-lived program on the worker decodes the sequences of every
 * current member in the same step, so each step reads the weights once for all of them.
 * Members join at step boundaries (their prompt chunked into the steps alongside the running
 * decodes, under a per-step row budget) and leave on the end of generation, their token limit,
 * a cancel, a deadline or the batcher closing. Each member gets a {@link TokenStream} of its own
 * (a {@link TokenFeed}), so iteration, {@code Flow} demand, {@code cancel()}, deadlines and
 * outcomes work as for any request.
 *
 * <pre>{@code
 * try (Batcher batcher = Batcher.start(worker, model, BatcherConfig.defaults())) {
 *     Completion c = batcher.submit(model.encode("Once upon a time"), GenerateOptions.defaults(), null);
 *     for (Completion.Delta d : c) System.out.print(d.text());
 * }
 * }</pre>
 *
 * <h2>Implementation Overview</h2>
 *
 * <p>The batcher is the facade of the engine's rooms ({@code dev.tandem.llm.engine}): the
 * {@link dev.tandem.llm.engine.Scheduler} decides who takes part in each step and with which
 * rows, the {@link dev.tandem.llm.engine.KvBlockPool} holds the KV blocks (with prefix
 * caching), the {@link dev.tandem.llm.engine.StepBuilder} turns a plan into tasks through the
 * model's {@link dev.tandem.llm.engine.ForwardPass}, and {@link SequenceLimits} says when a
 * sequence ends. The batcher holds the one lock around the scheduler, owns the members' feeds,
 * runs the program and delivers the tokens.
 *
 * <p><b>State.</b> Under {@code lock}: the scheduler (queue, batch, slots, reservations, pool)
 * and the flags {@code closing}, {@code stopping}, {@code failure}. A member reserves, when it
 * joins, every block it can ever need, so a member that joined never runs out of cache
 * mid-stream; one that could never fit is rejected at {@code submit}.
 *
 * <p><b>The program</b> (its own virtual thread, as every request's) allocates its buffers once,
 * then loops: under the lock it drops members that ended (releasing their feeds), admits waiting
 * members and plans a step; it waits on the lock's condition when there is nothing to plan.
 * Outside the lock it builds the step, puts the plan on the {@code inFlight} queue, in build
 * order, and ends the step with the columns' tokens as the step's output.
 *
 * <p><b>Delivery.</b> The program's own stream has one subscriber with unbounded demand; the
 * runtime hands it the steps' tokens in step order on a virtual thread, and it pairs each with
 * the plan at the head of {@code inFlight}. A token goes to its member's feed unless the member
 * has ended or left — so tokens of steps built before a member's end are dropped, never
 * delivered. {@link SequenceLimits#after} decides whether the token ends the member (end of
 * generation, token limit: the feed completes); the reader's cancel, a stop string, the
 * deadline and the worker closing end it from elsewhere. Any end wakes the program
 * ({@code onChange}), which drops the member at its next step boundary.
 *
 * <p><b>Why it is correct.</b> Every task declares its regions, so the runtime orders it after
 * whatever wrote what it reads: a decoding row's input token after the previous step's sample,
 * a prompt chunk's attention after the chunk before it wrote its keys, and a block reused by a
 * new member after every task of the old one that touched it. A member's rows compute exactly
 * what a request of its own computes (rows are independent in every kernel), so greedy output
 * is token for token that of {@link LanguageModel} alone.
 *
 * <p><b>Failures of one member.</b> A draw that throws (a member's grammar that the vocabulary
 * cannot continue) is caught in the sample task and recorded on the member; the delivery fails
 * that member's feed with it, and the batch goes on. Errors belong to the request that caused them.
 *
 * <p><b>Back-pressure.</b> A member whose reader holds {@code streamBuffer} tokens it has not
 * taken (counting tokens in built steps) sits out the steps until the reader takes one (the
 * feed's {@code onChange} wakes the program); the others go on.
 */
public final class Batcher implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(Batcher.class);
    private static final ValueLayout.OfInt I32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private final Worker worker;
    private final LanguageModel model;
    private final SequenceLimits limits;
    private final BatcherConfig config;
    private final ForwardPass pass;
    private final int blockSize;
    private final int poolBlocks;

    private final ReentrantLock lock = new ReentrantLock();
    private final Condition work = lock.newCondition();
    private final Scheduler<Member> scheduler; // guarded by lock
    private boolean closing; // guarded by lock: no new members
    private boolean stopping; // guarded by lock: every member ends, then the program returns
    private Throwable failure; // guarded by lock
    private long firstTokens; // guarded by lock: the time to first token, by phase (BatcherStats)
    private long firstTokenQueueNanos; // guarded by lock
    private long firstTokenScheduleNanos; // guarded by lock
    private long firstTokenStepNanos; // guarded by lock

    private final ConcurrentLinkedQueue<StepPlan> inFlight = new ConcurrentLinkedQueue<>();
    private final TokenStream program;
    private final CompletableFuture<Void> stopped = new CompletableFuture<>();

    private Batcher(Worker worker, LanguageModel model, BatcherConfig config) {
        this.worker = worker;
        this.model = model;
        this.limits = model.limits();
        this.config = config;
        this.pass = model.model().forwardPass();
        this.blockSize = pass.kvBlockSize();
        LlamaConfig c = model.config();
        int perContext = Math.ceilDiv(c.contextLength(), blockSize);
        long perBlock = 2L * c.layers() * pass.kvBlockBytes();
        this.poolBlocks = config.kvBlocks() > 0 ? config.kvBlocks()
                : (int) Math.max(1, Math.min((long) config.maxBatch() * perContext, config.kvBytes() / perBlock));
        this.scheduler = new Scheduler<>(config.maxBatch(), config.tokenBudget(), config.promptRows(),
                config.streamBuffer(),
                config.prefill() == BatcherConfig.PrefillOrder.SHORTEST_FIRST,
                new KvBlockPool(poolBlocks, blockSize, config.prefixCache()));
        Program<Batcher> body = (o, self) -> run(o);
        this.program = worker.run(body, this, RunOptions.defaults().withRunAhead(config.runAhead()));
        program.subscribe(new Delivery());
        // The delivery's end completes `stopped`; so does the program's outcome, so that close() never
        // depends on the subscriber alone to learn that the program is over.
        program.completion().whenComplete((outcome, error) -> {
            endAll(error != null ? error : outcome != null && outcome.status() == Status.FAILED ? outcome.cause() : null);
            stopped.complete(null);
        });
    }

    /**
     * Starts the batch program of {@code model} (loaded onto {@code worker}) on the worker.
     *
     * @throws IllegalStateException when the worker is closed
     */
    public static Batcher start(Worker worker, LanguageModel model, BatcherConfig config) {
        return new Batcher(Objects.requireNonNull(worker, "worker"), Objects.requireNonNull(model, "model"),
                Objects.requireNonNull(config, "config"));
    }

    public LanguageModel model() {
        return model;
    }

    public BatcherConfig config() {
        return config;
    }

    /** Blocks of the KV pool. */
    public int kvBlocks() {
        return poolBlocks;
    }

    /** Device bytes of the batch program: KV pool, one step's activations, token buffers. */
    public long deviceBytes() {
        return StepBuilder.deviceBytes(pass, poolBlocks, config.tokenBudget(), config.maxBatch());
    }

    /**
     * Submits a completion of {@code prompt}: it joins the batch at a step boundary as soon as a
     * slot is free and the pool can hold its whole context ({@code prompt + maxTokens}, capped
     * by the model's context; it ends with {@link FinishReason#LENGTH} there).
     *
     * @param deadline ends it as DEADLINE_EXCEEDED this long from now, queued or running; null for none
     * @throws IllegalArgumentException when the prompt is empty, has a token outside the
     *         vocabulary or leaves no room in the context
     * @throws AdmissionRejectedException {@code QUEUE_FULL} when {@code maxQueued} members are
     *         waiting, {@code TOO_LARGE} when the whole pool could not hold its context,
     *         {@code CLOSED} once the batcher is closing or has failed
     */
    public Completion submit(int[] prompt, GenerateOptions options, Duration deadline) {
        Objects.requireNonNull(prompt, "prompt");
        Objects.requireNonNull(options, "options");
        int vocab = model.config().vocab();
        if (prompt.length == 0) {
            throw new IllegalArgumentException("the prompt is empty; it needs at least one token");
        }
        for (int i = 0; i < prompt.length; i++) {
            if (prompt[i] < 0 || prompt[i] >= vocab) {
                throw new IllegalArgumentException("prompt token " + i + " = " + prompt[i] + " must be in [0, vocab = "
                        + vocab + ")");
            }
        }
        int maxTokens = limits.maxTokens(prompt.length, options.maxTokens());
        TokenGrammar grammar = options.grammar() == null ? null : model.compile(options.grammar());
        int need = Sequence.blocksFor(prompt.length, maxTokens, blockSize);
        if (need > poolBlocks) {
            throw new AdmissionRejectedException(AdmissionRejectedException.Reason.TOO_LARGE, "a prompt of "
                    + prompt.length + " tokens and " + maxTokens + " more need " + need + " KV blocks of "
                    + blockSize + " positions; the pool has " + poolBlocks);
        }
        lock.lock();
        try {
            if (closing || failure != null) {
                throw new AdmissionRejectedException(AdmissionRejectedException.Reason.CLOSED,
                        failure != null ? "the batcher failed: " + failure : "the batcher is closing");
            }
            Member m = new Member(prompt.clone(), options, maxTokens, grammar);
            if (!scheduler.mayQueue(m, config.maxQueued())) {
                throw new AdmissionRejectedException(AdmissionRejectedException.Reason.QUEUE_FULL,
                        config.maxQueued() + " members are waiting to join");
            }
            m.feed = TokenFeed.builder(worker).name("member").deadline(deadline).onChange(this::wake).build();
            m.completion = model.start(m.feed.stream(), prompt, options);
            scheduler.enqueue(m);
            work.signal();
            return m.completion;
        } finally {
            lock.unlock();
        }
    }

    /** A snapshot of the batch's state and counters. */
    public BatcherStats stats() {
        lock.lock();
        try {
            KvBlockPool pool = scheduler.pool();
            return new BatcherStats(scheduler.active().size(), scheduler.queued().size(), config.maxBatch(),
                    pool.held(), scheduler.reserved(), poolBlocks, scheduler.steps(), scheduler.prefillRows(),
                    scheduler.decodeRows(), scheduler.mixedSteps(), scheduler.pausedRows(), scheduler.tokens(),
                    pool.cached(), scheduler.cachedPromptTokens(), scheduler.computedPromptTokens(), pool.evictions(),
                    firstTokens, firstTokenQueueNanos, firstTokenScheduleNanos, firstTokenStepNanos);
        } finally {
            lock.unlock();
        }
    }

    /** Ends every member (CANCELLED), queued or active, and stops the program; waits for it. */
    @Override
    public void close() {
        stopProgram();
        program.completion().join();
        stopped.join();
    }

    /**
     * Closes as {@link #close()} does but first lets the members finish for at most {@code drain}
     * (queued ones still join); no new member is admitted meanwhile.
     *
     * @return the stream ids of the members that were still running or queued at the bound and
     *         were cancelled, ascending; empty when every member finished by itself
     */
    public List<Long> close(Duration drain) {
        Objects.requireNonNull(drain, "drain");
        long until = System.nanoTime() + drain.toNanos();
        List<Long> cut = new ArrayList<>();
        lock.lock();
        try {
            closing = true; // refuses new members; the ones here and queued go on
            while (!scheduler.idle() && failure == null && !stopping) {
                long left = until - System.nanoTime();
                if (left <= 0) {
                    break;
                }
                work.awaitNanos(left);
            }
            for (Member m : scheduler.active()) {
                cut.add(m.feed.id());
            }
            for (Member m : scheduler.queued()) {
                cut.add(m.feed.id());
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            lock.unlock();
        }
        stopProgram();
        try {
            program.completion().get(5, TimeUnit.SECONDS);
            stopped.get(5, TimeUnit.SECONDS);
        } catch (TimeoutException | java.util.concurrent.ExecutionException e) {
            log.warn("batcher of {}: the program did not stop within 5 s of its members' end", model.name());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        return cut.stream().sorted().toList();
    }

    /** Ends every member and lets the program return. */
    private void stopProgram() {
        lock.lock();
        try {
            closing = true;
            stopping = true;
            for (Member m : scheduler.queued()) {
                m.feed.end(Status.CANCELLED);
            }
            for (Member m : scheduler.active()) {
                m.feed.end(Status.CANCELLED);
            }
            work.signalAll();
        } finally {
            lock.unlock();
        }
    }

    private void wake() {
        lock.lock();
        try {
            work.signalAll();
        } finally {
            lock.unlock();
        }
    }

    // ---- the program -------------------------------------------------------------------------

    private void run(Orchestrator o) throws InterruptedException {
        StepBuilder builder = new StepBuilder(pass, poolBlocks, config.tokenBudget(), config.maxBatch());
        builder.allocate(o);
        try {
            while (true) {
                StepPlan plan = plan();
                if (plan == null) {
                    return;
                }
                Region output = builder.build(o, plan);
                inFlight.add(plan);
                o.endStep(output);
            }
        } finally {
            endAll(null);
        }
    }

    /** Under the lock: drops ended members, admits waiting ones, plans a step; waits for work; null when closing. */
    private StepPlan plan() throws InterruptedException {
        lock.lock();
        try {
            while (true) {
                for (Member m : scheduler.dropEnded()) {
                    m.feed.release();
                }
                if (scheduler.idle()) {
                    work.signalAll(); // a draining close waits for this
                    if (stopping) {
                        return null;
                    }
                }
                if (!stopping) {
                    for (Member m : scheduler.admit()) {
                        m.join();
                    }
                }
                StepPlan plan = scheduler.plan();
                if (plan != null) {
                    long now = System.nanoTime();
                    for (int i = 0; i < plan.columns(); i++) {
                        Member m = (Member) plan.sequence(i);
                        if (m.firstPlannedAt == 0) {
                            m.firstPlannedAt = now; // the step that yields its first token
                        }
                    }
                    return plan;
                }
                work.await();
            }
        } finally {
            lock.unlock();
        }
    }

    // ---- delivery ----------------------------------------------------------------------------

    /** The one subscriber of the program's stream: each step's tokens to their members, in step order. */
    private final class Delivery implements Flow.Subscriber<Token> {
        @Override
        public void onSubscribe(Flow.Subscription subscription) {
            subscription.request(Long.MAX_VALUE);
        }

        @Override
        public void onNext(Token token) {
            StepPlan plan = inFlight.poll();
            if (plan == null || plan.columns() == 0) {
                return;
            }
            MemorySegment ints = MemorySegment.ofArray(token.bytes());
            lock.lock();
            try {
                for (int i = 0; i < plan.columns(); i++) {
                    Member m = (Member) plan.sequence(i);
                    scheduler.delivered(m);
                    // the sample task queued one record per token of the member, in step order
                    TokenLogprobs lp = m.logprobs() == null ? null : m.logprobs().poll();
                    if (m.hasLeft() || m.feed.isEnded()) {
                        continue; // built before its end: dropped
                    }
                    Throwable sampleFailure = m.sampleFailure();
                    if (sampleFailure != null) {
                        m.feed.fail(sampleFailure);
                        continue;
                    }
                    int t = ints.getAtIndex(I32, i);
                    if (lp == null) {
                        m.feed.offerInt(t);
                    } else {
                        byte[] bytes = new byte[Integer.BYTES + TokenLogprobs.bytes(lp.topTokens().length)];
                        MemorySegment to = MemorySegment.ofArray(bytes);
                        to.set(I32, 0, t);
                        lp.writeTo(to, Integer.BYTES);
                        m.feed.offer(bytes);
                    }
                    scheduler.accepted(m, t);
                    if (m.delivered() == 1) {
                        long now = System.nanoTime();
                        firstTokens++;
                        firstTokenQueueNanos += m.joinedAt - m.submittedAt;
                        firstTokenScheduleNanos += m.firstPlannedAt - m.joinedAt;
                        firstTokenStepNanos += now - m.firstPlannedAt;
                    }
                    if (limits.after(t, m.delivered(), m.maxTokens(), m.options.ignoreEos())
                            != SequenceLimits.Verdict.CONTINUE) {
                        m.feed.complete();
                    }
                }
                work.signalAll();
            } finally {
                lock.unlock();
            }
        }

        @Override
        public void onError(Throwable throwable) {
            Throwable cause = throwable;
            if (throwable instanceof StreamTerminatedException e) {
                // Cancelled with its worker, or past no deadline of its own: the members end as CANCELLED.
                cause = e.outcome().status() == Status.FAILED ? e.outcome().cause() : null;
            }
            endAll(cause);
            stopped.complete(null);
        }

        @Override
        public void onComplete() {
            endAll(null);
            stopped.complete(null);
        }
    }

    /** The program has stopped (or failed): every member ends and leaves; the batcher admits no one. */
    private void endAll(Throwable cause) {
        lock.lock();
        try {
            closing = true;
            stopping = true;
            if (cause != null && failure == null) {
                failure = cause;
                log.warn("batcher of {} failed; its members fail with it", model.name(), cause);
            }
            for (Member m : scheduler.clear()) {
                if (cause != null) {
                    m.feed.fail(cause);
                } else {
                    m.feed.end(Status.CANCELLED);
                }
                m.feed.release();
            }
            work.signalAll();
        } finally {
            lock.unlock();
        }
    }

    // ---- members -------------------------------------------------------------------------------

    /** One member: the engine's sequence, with the feed its reader takes tokens from. */
    private final class Member extends Sequence {
        final GenerateOptions options;
        final TokenGrammar grammar;
        TokenFeed feed; // set once in submit, before the member is queued
        Completion completion;
        final long submittedAt = System.nanoTime();
        long joinedAt; // guarded by lock, as the times below
        long firstPlannedAt;

        Member(int[] prompt, GenerateOptions options, int maxTokens, TokenGrammar grammar) {
            super(prompt, maxTokens, blockSize, options.logprobs() >= 0);
            this.options = options;
            this.grammar = grammar;
        }

        /** It joined the batch (under the lock, before its first step is built). */
        void join() {
            joinedAt = System.nanoTime();
            Sampler sampler = new Sampler(options.sampler(), model.config().vocab(),
                    grammar == null ? null : grammar.matcher(), options.logprobs());
            sampler.acceptPrompt(prompt());
            sampler(sampler);
            completion.cachedPromptTokens(cachedTokens());
            feed.started();
        }

        @Override
        protected boolean ended() {
            return feed.isEnded();
        }

        @Override
        protected long unread() {
            return feed.unread();
        }
    }

    @Override
    public String toString() {
        return "Batcher[" + model.name() + ", " + stats() + "]";
    }

    /** For tests: checks the KV pool's invariants with no member in it (every block free or cached). */
    void checkPoolIdle() {
        lock.lock();
        try {
            scheduler.pool().checkIdle();
        } finally {
            lock.unlock();
        }
    }

    /** For tests: the outcome of the batch program once it ended. */
    CompletableFuture<Outcome> programCompletion() {
        return program.completion();
    }
}
