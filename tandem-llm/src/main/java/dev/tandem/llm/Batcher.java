package dev.tandem.llm;

import static dev.tandem.Access.read;
import static dev.tandem.Access.readWrite;
import static dev.tandem.Access.write;

import dev.tandem.Access;
import dev.tandem.AdmissionRejectedException;
import dev.tandem.Buffer;
import dev.tandem.Kernel;
import dev.tandem.Orchestrator;
import dev.tandem.Outcome;
import dev.tandem.Program;
import dev.tandem.RunOptions;
import dev.tandem.Status;
import dev.tandem.StreamTerminatedException;
import dev.tandem.Token;
import dev.tandem.TokenFeed;
import dev.tandem.TokenStream;
import dev.tandem.Worker;
import dev.tandem.llm.grammar.TokenGrammar;
import dev.tandem.llm.sampling.Sampler;
import dev.tandem.llm.sampling.TokenLogprobs;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Comparator;
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
 * <p><b>State.</b> Under one lock: the queue of members waiting to join, the active members
 * (each with a sequence slot in {@code [0, maxBatch)}, its block table, how much of its prompt
 * is in built steps, how many of its tokens are in built steps ({@code built}) and how many
 * were delivered), the pool's free blocks and the blocks reserved. A member reserves, when it
 * joins, every block it can ever need ({@code ceil((prompt + maxTokens - 1) / blockSize)}) and
 * takes them from the pool as it grows, so a member that joined never runs out of cache
 * mid-stream; one that could never fit is rejected at {@code submit}.
 *
 * <p><b>Prefix caching.</b> The blocks are {@link KvBlockPool}'s: a member's full block is
 * registered there under its content (the prefix before it and its tokens) once tasks already
 * built write every position of it and every token of it is known; a joining member takes the
 * longest registered chain that begins its prompt and prefills only the rest (never its last
 * prompt token, whose logits give its first token). Registered blocks stay cached after their
 * member leaves until the pool needs the room. See {@link KvBlockPool} for why a shared block is
 * never written.
 *
 * <p><b>The program</b> (its own virtual thread, as every request's) allocates the pool, the
 * activations of one step and the token buffers once, then loops: under the lock it drops
 * members that ended (returning their blocks and slot, releasing their feed), admits waiting
 * members while a slot is free and their reservation fits, and plans a step — one row for
 * each decoding member that is not paused, then prompt chunks of joining members in the
 * budget's remaining rows ({@link BatcherConfig.PrefillOrder}); it waits on the lock's
 * condition when there is nothing to plan. Outside the lock it builds the step: an upload of
 * the prompt chunks' tokens, a gather of the decoding rows' input tokens from the slot-indexed
 * {@code next} buffer (which the previous steps' sample tasks wrote), the forward pass, and one
 * sample task that picks, with each member's own {@link Sampler}, the token of every row that
 * ends a prompt or decodes, writing it to the step's token region and to the member's slot in
 * {@code next}. The plan (which member each token column belongs to) goes on the
 * {@code inFlight} queue, in build order.
 *
 * <p><b>Delivery.</b> The program's own stream has one subscriber with unbounded demand; the
 * runtime hands it the steps' tokens in step order on a virtual thread, and it pairs each with
 * the plan at the head of {@code inFlight}. A token goes to its member's feed unless the member
 * has ended or left — so tokens of steps built before a member's end are dropped, never
 * delivered. The end of generation or the member's token limit completes its feed; the reader's
 * cancel, the deadline and the worker closing end it from elsewhere. Any end wakes the program
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
    private static final long F = Float.BYTES;

    private final Worker worker;
    private final LanguageModel model;
    private final LlamaModel llama;
    private final BatcherConfig config;
    private final int blockSize;
    private final int poolBlocks;
    private final KvBlockPool pool; // guarded by lock
    private final Kernel gather;

    private final ReentrantLock lock = new ReentrantLock();
    private final Condition work = lock.newCondition();
    private final ArrayDeque<Member> queue = new ArrayDeque<>(); // guarded by lock
    private final List<Member> active = new ArrayList<>(); // guarded by lock
    private final boolean[] slotUsed; // guarded by lock
    private int reserved; // guarded by lock
    private boolean closing; // guarded by lock: no new members
    private boolean stopping; // guarded by lock: every member ends, then the program returns
    private Throwable failure; // guarded by lock
    private long steps; // guarded by lock
    private long prefillRows; // guarded by lock
    private long decodeRows; // guarded by lock
    private long tokens; // guarded by lock
    private long mixedSteps; // guarded by lock
    private long pausedRows; // guarded by lock
    private long cachedPromptTokens; // guarded by lock: prompt tokens taken from the prefix cache
    private long computedPromptTokens; // guarded by lock: prompt tokens prefilled

    private final ConcurrentLinkedQueue<Plan> inFlight = new ConcurrentLinkedQueue<>();
    private final TokenStream program;
    private final CompletableFuture<Void> stopped = new CompletableFuture<>();

    private Batcher(Worker worker, LanguageModel model, BatcherConfig config) {
        this.worker = worker;
        this.model = model;
        this.llama = model.model();
        this.config = config;
        this.blockSize = llama.options().kvBlockSize();
        LlamaConfig c = model.config();
        int perContext = Math.ceilDiv(c.contextLength(), blockSize);
        long perBlock = 2L * c.layers() * llama.kvBlockBytes();
        this.poolBlocks = config.kvBlocks() > 0 ? config.kvBlocks()
                : (int) Math.max(1, Math.min((long) config.maxBatch() * perContext, config.kvBytes() / perBlock));
        this.slotUsed = new boolean[config.maxBatch()];
        this.pool = new KvBlockPool(poolBlocks, blockSize, config.prefixCache());
        this.gather = Kernel.of("batch_gather", k -> {
            int n = (int) k.scalar(0);
            MemorySegment next = k.region(0);
            MemorySegment to = k.region(1);
            for (int i = 0; i < n; i++) {
                to.setAtIndex(I32, i, next.getAtIndex(I32, (int) k.scalar(1 + i)));
            }
        });
        Program<Batcher> body = (o, self) -> run(o);
        this.program = worker.run(body, this, RunOptions.defaults().withRunAhead(config.runAhead()));
        program.subscribe(new Delivery());
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
        LlamaConfig c = model.config();
        return 2L * c.layers() * poolBlocks * llama.kvBlockBytes()
                + llama.activationBytes(config.tokenBudget(), config.maxBatch())
                + (long) config.tokenBudget() * Integer.BYTES + 2L * config.maxBatch() * Integer.BYTES
                + (long) config.maxBatch() * c.vocab() * F;
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
        LlamaConfig c = model.config();
        if (prompt.length == 0) {
            throw new IllegalArgumentException("the prompt is empty; it needs at least one token");
        }
        for (int i = 0; i < prompt.length; i++) {
            if (prompt[i] < 0 || prompt[i] >= c.vocab()) {
                throw new IllegalArgumentException("prompt token " + i + " = " + prompt[i] + " must be in [0, vocab = "
                        + c.vocab() + ")");
            }
        }
        int room = c.contextLength() - prompt.length;
        if (room < 1) {
            throw new IllegalArgumentException("prompt of " + prompt.length
                    + " tokens leaves no room in the context of " + c.contextLength());
        }
        int maxTokens = Math.min(options.maxTokens(), room);
        TokenGrammar grammar = options.grammar() == null ? null : model.compile(options.grammar());
        int need = Math.ceilDiv(prompt.length + maxTokens - 1, blockSize);
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
            if (queue.size() >= config.maxQueued() && !(queue.isEmpty() && canJoin(need))) {
                throw new AdmissionRejectedException(AdmissionRejectedException.Reason.QUEUE_FULL,
                        config.maxQueued() + " members are waiting to join");
            }
            TokenFeed feed = TokenFeed.builder(worker).name("member").deadline(deadline).onChange(this::wake).build();
            Completion completion = model.start(feed.stream(), prompt, options);
            queue.add(new Member(feed, prompt.clone(), options, maxTokens, need, grammar, completion));
            work.signal();
            return completion;
        } finally {
            lock.unlock();
        }
    }

    /** A snapshot of the batch's state and counters. */
    public BatcherStats stats() {
        lock.lock();
        try {
            return new BatcherStats(active.size(), queue.size(), config.maxBatch(), pool.held(), reserved,
                    poolBlocks, steps, prefillRows, decodeRows, mixedSteps, pausedRows, tokens, pool.cached(),
                    cachedPromptTokens, computedPromptTokens, pool.evictions());
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
            while (!(active.isEmpty() && queue.isEmpty()) && failure == null && !stopping) {
                long left = until - System.nanoTime();
                if (left <= 0) {
                    break;
                }
                work.awaitNanos(left);
            }
            for (Member m : active) {
                cut.add(m.feed.id());
            }
            for (Member m : queue) {
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
            for (Member m : queue) {
                m.feed.end(Status.CANCELLED);
            }
            for (Member m : active) {
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
        LlamaConfig c = model.config();
        Buffer[] keys = new Buffer[c.layers()];
        Buffer[] values = new Buffer[c.layers()];
        for (int l = 0; l < c.layers(); l++) {
            keys[l] = o.allocate((long) poolBlocks * llama.kvBlockBytes());
            values[l] = o.allocate((long) poolBlocks * llama.kvBlockBytes());
        }
        LlamaModel.Activations a = llama.new Activations(config.tokenBudget(), config.maxBatch(), o::allocate);
        Buffer rowTokens = o.allocate((long) config.tokenBudget() * Integer.BYTES);
        Buffer next = o.allocate((long) config.maxBatch() * Integer.BYTES);
        Buffer out = o.allocate((long) config.maxBatch() * Integer.BYTES);
        Buffer rowLogits = o.allocate((long) config.maxBatch() * c.vocab() * F);
        try {
            while (true) {
                Plan plan = plan();
                if (plan == null) {
                    return;
                }
                build(o, plan, keys, values, a, rowTokens, next, out, rowLogits);
            }
        } finally {
            endAll(null);
        }
    }

    /** Under the lock: drops ended members, admits waiting ones, plans a step; waits for work; null when closing. */
    private Plan plan() throws InterruptedException {
        lock.lock();
        try {
            while (true) {
                dropEnded();
                if (stopping && active.isEmpty() && queue.isEmpty()) {
                    return null;
                }
                admit();
                Plan plan = planStep();
                if (plan != null) {
                    return plan;
                }
                work.await();
            }
        } finally {
            lock.unlock();
        }
    }

    private void dropEnded() {
        for (var it = queue.iterator(); it.hasNext(); ) {
            Member m = it.next();
            if (m.feed.isEnded()) {
                it.remove();
                m.feed.release();
            }
        }
        for (var it = active.iterator(); it.hasNext(); ) {
            Member m = it.next();
            if (m.feed.isEnded()) {
                it.remove();
                leave(m);
            }
        }
        if (active.isEmpty() && queue.isEmpty()) {
            work.signalAll(); // a draining close waits for this
        }
    }

    /** Returns a member's blocks (those of a known prefix stay cached), reservation and slot; releases its feed. */
    private void leave(Member m) {
        for (int j = 0; j < m.blockCount; j++) {
            pool.release(m.table[j]);
        }
        m.blockCount = 0;
        reserved -= m.need;
        slotUsed[m.slot] = false;
        m.left = true;
        m.feed.release();
    }

    private boolean canJoin(int need) {
        if (reserved + need > poolBlocks) {
            return false;
        }
        for (boolean used : slotUsed) {
            if (!used) {
                return true;
            }
        }
        return false;
    }

    private void admit() {
        while (!queue.isEmpty() && !stopping) {
            Member m = queue.peek();
            if (!canJoin(m.need)) {
                return; // in order: a large member is not overtaken forever
            }
            queue.poll();
            int slot = 0;
            while (slotUsed[slot]) {
                slot++;
            }
            slotUsed[slot] = true;
            m.slot = slot;
            reserved += m.need;
            m.sampler = new Sampler(m.options.sampler(), model.config().vocab(),
                    m.grammar == null ? null : m.grammar.matcher(), m.options.logprobs());
            m.sampler.acceptPrompt(m.prompt);
            m.takeCachedPrefix();
            m.feed.started();
            active.add(m);
        }
    }

    /** The rows of the next step, or null when no member can take part in one. */
    private Plan planStep() {
        List<Member> decoding = new ArrayList<>();
        List<Member> prefilling = new ArrayList<>();
        int paused = 0;
        for (Member m : active) {
            if (m.prefilled < m.prompt.length) {
                prefilling.add(m);
            } else if (m.built < m.maxTokens) {
                if (m.feed.unread() + (m.built - m.delivered) >= config.streamBuffer()) {
                    paused++;
                } else {
                    decoding.add(m);
                }
            }
        }
        if (decoding.isEmpty() && prefilling.isEmpty()) {
            return null;
        }
        if (config.prefill() == BatcherConfig.PrefillOrder.SHORTEST_FIRST) {
            prefilling.sort(Comparator.comparingInt(m -> m.prompt.length - m.prefilled));
        }
        int budget = config.tokenBudget() - decoding.size();
        List<int[]> chunks = new ArrayList<>(); // member index in prefilling, from, to
        int prefill = 0;
        for (int i = 0; i < prefilling.size() && prefill < budget; i++) {
            Member m = prefilling.get(i);
            int n = Math.min(m.prompt.length - m.prefilled, budget - prefill);
            chunks.add(new int[] {i, m.prefilled, m.prefilled + n});
            prefill += n;
        }
        int rows = prefill + decoding.size();
        Plan plan = new Plan(rows, prefill, decoding.size());
        int r = 0;
        int column = 0;
        for (int[] chunk : chunks) {
            Member m = prefilling.get(chunk[0]);
            for (int p = chunk[1]; p < chunk[2]; p++) {
                plan.prefillTokens[r] = m.prompt[p];
                plan.position[r] = p;
                m.ensureBlock(p);
                plan.tables[r] = m.table;
                r++;
            }
            m.prefilled = chunk[2];
            m.written(chunk[2]);
            computedPromptTokens += chunk[2] - chunk[1];
            if (m.prefilled == m.prompt.length) {
                plan.add(column++, r - 1, m); // its last prompt row yields token 0
            }
        }
        for (int i = 0; i < decoding.size(); i++) {
            Member m = decoding.get(i);
            int p = m.prompt.length + m.built - 1; // the position of its previous token
            m.ensureBlock(p);
            m.written(p + 1);
            plan.position[r] = p;
            plan.tables[r] = m.table;
            plan.decodeSlots[i] = m.slot;
            plan.add(column++, r, m);
            r++;
        }
        plan.columns = column;
        steps++;
        prefillRows += prefill;
        decodeRows += decoding.size();
        pausedRows += paused; // counted for built steps only, not for plans that found nothing to do
        if (prefill > 0 && !decoding.isEmpty()) {
            mixedSteps++;
        }
        return plan;
    }

    /** Program thread, outside the lock: the tasks of one planned step. */
    private void build(Orchestrator o, Plan plan, Buffer[] keys, Buffer[] values, LlamaModel.Activations a,
            Buffer rowTokens, Buffer next, Buffer out, Buffer rowLogits) {
        int vocab = model.config().vocab();
        if (plan.prefill > 0) {
            int[] tokens = java.util.Arrays.copyOf(plan.prefillTokens, plan.prefill);
            o.upload(rowTokens.region(0, (long) plan.prefill * Integer.BYTES), MemorySegment.ofArray(tokens));
        }
        if (plan.decode > 0) {
            long[] scalars = new long[1 + plan.decode];
            scalars[0] = plan.decode;
            for (int i = 0; i < plan.decode; i++) {
                scalars[1 + i] = plan.decodeSlots[i];
            }
            o.submit(gather, scalars, read(next.region()),
                    write(rowTokens.region((long) plan.prefill * Integer.BYTES, (long) plan.decode * Integer.BYTES)));
        }
        int n = plan.columns;
        int[] logitRows = java.util.Arrays.copyOf(plan.logitRows, n);
        llama.forward(o, a, keys, values, rowTokens, plan.rows, plan.position, plan.tables, logitRows);
        if (n > 0) {
            Sampler[] samplers = new Sampler[n];
            Member[] members = java.util.Arrays.copyOf(plan.members, n);
            int[] slots = new int[n];
            @SuppressWarnings("unchecked")
            ConcurrentLinkedQueue<TokenLogprobs>[] logprobs = new ConcurrentLinkedQueue[n];
            for (int i = 0; i < n; i++) {
                samplers[i] = plan.members[i].sampler;
                slots[i] = plan.members[i].slot;
                logprobs[i] = plan.members[i].logprobs;
            }
            List<Access> accesses = new ArrayList<>();
            int blocks = llama.addLogitReads(accesses, a, n);
            Kernel sample = Kernel.of("batch_sample", k -> {
                MemorySegment tokens = k.region(blocks);
                MemorySegment nextTokens = k.region(blocks + 1);
                MemorySegment logits = k.region(blocks + 2);
                for (int i = 0; i < n; i++) {
                    long row = (long) i * vocab * F;
                    LlamaModel.gatherRow(k, 0, blocks, n, i, logits, row);
                    int token;
                    try {
                        token = samplers[i].sample(logits, row);
                    } catch (RuntimeException e) {
                        // This member's grammar or logits failed: it fails alone, at delivery.
                        members[i].sampleFailure = e;
                        token = 0;
                    }
                    if (logprobs[i] != null && members[i].sampleFailure == null) {
                        logprobs[i].add(samplers[i].lastLogprobs());
                    }
                    tokens.setAtIndex(I32, i, token);
                    nextTokens.setAtIndex(I32, slots[i], token);
                }
            });
            accesses.add(write(out.region(0, (long) n * Integer.BYTES)));
            accesses.add(readWrite(next.region()));
            accesses.add(write(rowLogits.region(0, (long) n * vocab * F)));
            o.submit(sample, accesses.toArray(Access[]::new));
        }
        inFlight.add(plan);
        o.endStep(out.region(0, (long) Math.max(1, n) * Integer.BYTES));
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
            Plan plan = inFlight.poll();
            if (plan == null || plan.columns == 0) {
                return;
            }
            MemorySegment ints = MemorySegment.ofArray(token.bytes());
            lock.lock();
            try {
                for (int i = 0; i < plan.columns; i++) {
                    Member m = plan.members[i];
                    m.delivered++;
                    // the sample task queued one record per token of the member, in step order
                    TokenLogprobs lp = m.logprobs == null ? null : m.logprobs.poll();
                    if (m.left || m.feed.isEnded()) {
                        continue; // built before its end: dropped
                    }
                    Throwable sampleFailure = m.sampleFailure;
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
                    m.generated(t);
                    tokens++;
                    if (model.endsGeneration(t) && !m.options.ignoreEos()) {
                        m.feed.complete();
                    } else if (m.delivered >= m.maxTokens) {
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
            for (Member m : queue) {
                if (cause != null) {
                    m.feed.fail(cause);
                } else {
                    m.feed.end(Status.CANCELLED);
                }
                m.feed.release();
            }
            queue.clear();
            for (Member m : active) {
                if (cause != null) {
                    m.feed.fail(cause);
                } else {
                    m.feed.end(Status.CANCELLED);
                }
                leave(m);
            }
            active.clear();
            work.signalAll();
        } finally {
            lock.unlock();
        }
    }

    // ---- state ---------------------------------------------------------------------------------

    /** One member's sequence. Fields other than the finals are guarded by the batcher's lock. */
    private final class Member {
        final TokenFeed feed;
        final int[] prompt;
        final GenerateOptions options;
        final int maxTokens;
        final int need;
        final int[] table;
        final Completion completion;
        /** The prompt, then the tokens delivered: the token at each position whose keys the cache holds. */
        final int[] sequence;
        int known;
        /** The member's grammar, or null. */
        final TokenGrammar grammar;
        /**
         * With logprobs: the records of its sampled tokens, added by the sample task and taken by the
         * delivery in the same (step) order; null without.
         */
        final ConcurrentLinkedQueue<TokenLogprobs> logprobs;
        /**
         * Set by a sample task whose draw for this member threw (say, its grammar allows no token
         * of the vocabulary); the delivery fails the member's feed with it. Written by the sample task
         * before the step's token exists, read by the delivery after: volatile for the reader only.
         */
        volatile Throwable sampleFailure;
        int blockCount;
        /** Positions whose keys and values tasks already built write. */
        int written;
        /** Leading blocks registered in (or taken from) the prefix cache, and the last one's key. */
        int registered;
        KvBlockPool.Key lastKey;
        int slot = -1;
        Sampler sampler;
        int prefilled;
        int built;
        int delivered;
        boolean left;

        Member(TokenFeed feed, int[] prompt, GenerateOptions options, int maxTokens, int need, TokenGrammar grammar,
                Completion completion) {
            this.feed = feed;
            this.grammar = grammar;
            this.logprobs = options.logprobs() >= 0 ? new ConcurrentLinkedQueue<>() : null;
            this.prompt = prompt;
            this.options = options;
            this.maxTokens = maxTokens;
            this.need = need;
            this.table = new int[need];
            this.completion = completion;
            this.sequence = java.util.Arrays.copyOf(prompt, prompt.length + maxTokens);
            this.known = prompt.length;
        }

        /**
         * On joining: the cached blocks that begin its prompt become the start of its table and
         * its prefill starts after them. At least the prompt's last token is always computed
         * (its logits give the first token), so only blocks before it are taken.
         */
        void takeCachedPrefix() {
            int[] shared = pool.match(prompt, (prompt.length - 1) / blockSize);
            System.arraycopy(shared, 0, table, 0, shared.length);
            blockCount = shared.length;
            registered = shared.length;
            lastKey = shared.length == 0 ? null : pool.key(shared[shared.length - 1]);
            prefilled = shared.length * blockSize;
            written = prefilled;
            cachedPromptTokens += prefilled;
            completion.cachedPromptTokens(prefilled);
        }

        /** Takes blocks from the pool until position {@code p} has one (within the reservation). */
        void ensureBlock(int p) {
            int j = p / blockSize;
            while (blockCount <= j) {
                if (blockCount >= need) {
                    throw new AssertionError("member beyond its reservation: block " + j + " of " + need);
                }
                table[blockCount++] = pool.allocate();
            }
        }

        /** Tasks now built write the keys and values of positions below {@code end}. */
        void written(int end) {
            written = Math.max(written, end);
            registerFullBlocks();
        }

        /** Its token {@code t} was delivered: the token at the next position. */
        void generated(int t) {
            if (known < sequence.length) {
                sequence[known++] = t;
                registerFullBlocks();
            }
        }

        /** Registers each block whose every position is written and whose every token is known. */
        private void registerFullBlocks() {
            int limit = Math.min(written, known);
            while ((registered + 1) * blockSize <= limit && registered < blockCount) {
                lastKey = pool.register(table[registered], lastKey, sequence, registered * blockSize);
                registered++;
            }
        }
    }

    /** One built step: its rows, and the member of each token column. */
    private static final class Plan {
        final int rows;
        final int prefill;
        final int decode;
        final int[] position;
        final int[][] tables;
        final int[] prefillTokens;
        final int[] decodeSlots;
        final int[] logitRows;
        final Member[] members;
        int columns;

        Plan(int rows, int prefill, int decode) {
            this.rows = rows;
            this.prefill = prefill;
            this.decode = decode;
            this.position = new int[rows];
            this.tables = new int[rows][];
            this.prefillTokens = new int[prefill];
            this.decodeSlots = new int[decode];
            this.logitRows = new int[rows];
            this.members = new Member[rows];
        }

        void add(int column, int row, Member m) {
            logitRows[column] = row;
            members[column] = m;
            m.built++;
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
            pool.checkIdle();
        } finally {
            lock.unlock();
        }
    }

    /** For tests: the outcome of the batch program once it ended. */
    CompletableFuture<Outcome> programCompletion() {
        return program.completion();
    }
}
