package dev.tandem.llm.engine;

import static dev.tandem.Access.read;
import static dev.tandem.Access.readWrite;
import static dev.tandem.Access.write;

import dev.tandem.Access;
import dev.tandem.Buffer;
import dev.tandem.Kernel;
import dev.tandem.Orchestrator;
import dev.tandem.Region;
import dev.tandem.TaskContext;
import dev.tandem.llm.sampling.Sampler;
import dev.tandem.llm.sampling.TokenLogprobs;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * Turns a {@link StepPlan} into the step's tasks on the batch program's thread: an upload of
 * the prompt chunks' tokens, a gather of the decoding rows' input tokens from the slot-indexed
 * {@code next} buffer (which earlier steps' sample tasks wrote), the model's forward pass
 * through {@link ForwardPass}, and one sample task that draws every column's token with its
 * sequence's own {@link Sampler}, writing it to the step's output and to the sequence's slot of
 * {@code next}. It owns the program's device buffers: the KV pool, one step's activations and
 * the token buffers, allocated once by {@link #allocate}. Program thread only.
 */
public final class StepBuilder {
    private static final ValueLayout.OfInt I32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final long F = Float.BYTES;

    private final ForwardPass model;
    private final int poolBlocks;
    private final int tokenBudget;
    private final int maxBatch;
    private final Kernel gather;
    private Buffer[] keys;
    private Buffer[] values;
    private ForwardPass.Activations activations;
    private Buffer rowTokens;
    private Buffer next;
    private Buffer out;
    private Buffer rowLogits;

    public StepBuilder(ForwardPass model, int poolBlocks, int tokenBudget, int maxBatch) {
        this.model = model;
        this.poolBlocks = poolBlocks;
        this.tokenBudget = tokenBudget;
        this.maxBatch = maxBatch;
        this.gather = Kernel.of("batch_gather", k -> {
            int n = (int) k.scalar(0);
            MemorySegment from = k.region(0);
            MemorySegment to = k.region(1);
            for (int i = 0; i < n; i++) {
                to.setAtIndex(I32, i, from.getAtIndex(I32, (int) k.scalar(1 + i)));
            }
        });
    }

    /** Device bytes {@link #allocate} takes: KV pool, one step's activations, token buffers, logit rows. */
    public static long deviceBytes(ForwardPass model, int poolBlocks, int tokenBudget, int maxBatch) {
        return 2L * model.layers() * poolBlocks * model.kvBlockBytes()
                + model.activationBytes(tokenBudget, maxBatch)
                + (long) tokenBudget * Integer.BYTES + 2L * maxBatch * Integer.BYTES
                + (long) maxBatch * model.vocab() * F;
    }

    /** Allocates the program's buffers; once, on the program's thread, before the first step. */
    public void allocate(Orchestrator o) {
        keys = new Buffer[model.layers()];
        values = new Buffer[model.layers()];
        for (int l = 0; l < model.layers(); l++) {
            keys[l] = o.allocate((long) poolBlocks * model.kvBlockBytes());
            values[l] = o.allocate((long) poolBlocks * model.kvBlockBytes());
        }
        activations = model.activations(tokenBudget, maxBatch, o::allocate);
        rowTokens = o.allocate((long) tokenBudget * Integer.BYTES);
        next = o.allocate((long) maxBatch * Integer.BYTES);
        out = o.allocate((long) maxBatch * Integer.BYTES);
        rowLogits = o.allocate((long) maxBatch * model.vocab() * F);
    }

    /**
     * Submits the tasks of {@code plan}.
     *
     * @return the region its step ends with ({@code Orchestrator.endStep}): the columns' tokens, one int each
     */
    public Region build(Orchestrator o, StepPlan plan) {
        int vocab = model.vocab();
        if (plan.prefill > 0) {
            o.upload(rowTokens.region(0, (long) plan.prefill * Integer.BYTES),
                    MemorySegment.ofArray(plan.prefillTokens));
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
        activations.forward(o, keys, values, rowTokens, plan.rows, plan.position, plan.tables,
                Arrays.copyOf(plan.logitRows, n));
        if (n > 0) {
            submitSample(o, plan, n, vocab);
        }
        return out.region(0, (long) Math.max(1, n) * Integer.BYTES);
    }

    private void submitSample(Orchestrator o, StepPlan plan, int n, int vocab) {
        Sampler[] samplers = new Sampler[n];
        Sequence[] sequences = new Sequence[n];
        int[] slots = new int[n];
        @SuppressWarnings("unchecked")
        ConcurrentLinkedQueue<TokenLogprobs>[] logprobs = new ConcurrentLinkedQueue[n];
        for (int i = 0; i < n; i++) {
            Sequence s = plan.sequence(i);
            sequences[i] = s;
            samplers[i] = s.sampler();
            slots[i] = s.slot;
            logprobs[i] = s.logprobs();
        }
        List<Access> accesses = new ArrayList<>();
        int blocks = activations.addLogitReads(accesses, n);
        Kernel sample = Kernel.of("batch_sample", k -> {
            MemorySegment tokens = k.region(blocks);
            MemorySegment nextTokens = k.region(blocks + 1);
            MemorySegment logits = k.region(blocks + 2);
            for (int i = 0; i < n; i++) {
                long row = (long) i * vocab * F;
                gatherRow(k, 0, blocks, n, i, logits, row);
                int token;
                try {
                    token = samplers[i].sample(logits, row);
                } catch (RuntimeException e) {
                    // This sequence's grammar or logits failed: it fails alone, at delivery.
                    sequences[i].sampleFailed(e);
                    token = 0;
                }
                if (logprobs[i] != null && sequences[i].sampleFailure() == null) {
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

    /**
     * Copies row {@code i} of a block-major output (regions {@code [first, first + count)} of
     * {@code c}, {@code n} rows each) to {@code to} at byte {@code toOffset}.
     */
    public static void gatherRow(TaskContext c, int first, int count, int n, int i, MemorySegment to, long toOffset) {
        long at = toOffset;
        for (int k = first; k < first + count; k++) {
            MemorySegment block = c.region(k);
            long rowBytes = block.byteSize() / n;
            MemorySegment.copy(block, i * rowBytes, to, at, rowBytes);
            at += rowBytes;
        }
    }
}
