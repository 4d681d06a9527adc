package dev.tandem.llm.model;

import static dev.tandem.Access.readWrite;
import static dev.tandem.Access.write;

import dev.tandem.Access;
import dev.tandem.Buffer;
import dev.tandem.Kernel;
import dev.tandem.Orchestrator;
import dev.tandem.Program;
import dev.tandem.llm.Batcher;
import dev.tandem.llm.sampling.Sampler;
import dev.tandem.llm.sampling.SamplerConfig;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.LongFunction;

/**
 * The program that decodes one {@link LlamaRequest}, a fixed batch of sequences, step by step
 * ({@link LlamaModel#program()}): the request's own KV cache, activations and samplers, allocated
 * in its request memory when it starts.
 *
 * <p>Step 0 (prefill) is one forward pass over every prompt token of every sequence and samples
 * each sequence's first token; step {@code k} is one pass of one row per sequence. The KV cache is
 * paged: blocks of the model's KV block size, one block table per sequence, the blocks of
 * different sequences interleaved (block {@code j} of every sequence, then block {@code j + 1}).
 * Tokens stay on the device: a step's sample task writes the next step's input tokens, and the
 * host never waits for them, so it builds step {@code k + 1} while the device runs step {@code k}.
 *
 * <p>This is the runtime's plain program: one request, its batch fixed when it starts, no
 * scheduler. The continuous {@link Batcher} builds its steps through the same
 * {@link LlamaModel#forward}, with a shared block pool and members joining and leaving.
 */
final class LlamaProgram implements Program<LlamaRequest> {
    /** The value of a sequence's token before its first step. */
    private static final int NO_TOKEN = -2;
    private static final long F = Float.BYTES;
    private static final ValueLayout.OfInt I32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private final LlamaModel model;
    private final LlamaConfig config;
    private final LlamaKernels kernels;

    LlamaProgram(LlamaModel model, LlamaKernels kernels) {
        this.model = model;
        this.config = model.config();
        this.kernels = kernels;
    }

    @Override
    public void run(Orchestrator o, LlamaRequest request) {
        request.check(config);
        RequestState state = new RequestState(request, o::allocate);
        state.prefill(o);
        for (int k = 1; k < request.maxTokens(); k++) {
            state.decode(o, k);
        }
    }

    /** Device bytes one request allocates. */
    long requestBytes(LlamaRequest request) {
        long[] total = new long[1];
        new RequestState(request, bytes -> {
            total[0] += bytes;
            return null;
        });
        return total[0];
    }

    /**
     * Whether {@code request}'s tokens are its logits' argmax with nothing else to do: a greedy
     * sampler configuration without penalties or biases, no grammar, no log-probabilities. Its
     * sample task then runs the kernels' argmax instead of a sampler chain per sequence (the same
     * tokens: the chain's greedy draw is the first largest logit too).
     */
    static boolean greedy(LlamaRequest request) {
        SamplerConfig s = request.sampler();
        return s.greedy() && !s.penalizes() && s.logitBias().isEmpty() && request.grammar() == null
                && request.topLogprobs() < 0;
    }

    /** The buffers, block tables and pass builder of one request. Program thread only. */
    private final class RequestState {
        final LlamaRequest request;
        final int batch;
        final int[][] tables;
        final int[] promptLengths;
        final Buffer promptTokens;
        final Buffer input;
        final Buffer out;
        final LlamaModel.Activations a;
        final Buffer[] keys;
        final Buffer[] values;
        /** Unless the request is {@link #greedy}: the sample kernel of this request, holding one sampler per sequence. */
        final Kernel samplerKernel;

        RequestState(LlamaRequest request, LongFunction<Buffer> allocate) {
            this.request = request;
            this.batch = request.batch();
            int bs = model.options().kvBlockSize();
            int prompt = 0;
            promptLengths = new int[batch];
            int[] blockCounts = new int[batch];
            int cacheBlocks = 0;
            for (int b = 0; b < batch; b++) {
                promptLengths[b] = request.promptLength(b);
                prompt += promptLengths[b];
                blockCounts[b] = Math.ceilDiv(promptLengths[b] + request.maxTokens(), bs);
                cacheBlocks += blockCounts[b];
            }
            // Blocks of different sequences interleave: block j of every sequence, then block j + 1.
            this.tables = new int[batch][];
            for (int b = 0; b < batch; b++) {
                tables[b] = new int[blockCounts[b]];
            }
            int next = 0;
            for (int j = 0; next < cacheBlocks; j++) {
                for (int b = 0; b < batch; b++) {
                    if (j < blockCounts[b]) {
                        tables[b][j] = next++;
                    }
                }
            }
            promptTokens = allocate.apply((long) prompt * Integer.BYTES);
            input = allocate.apply((long) batch * Integer.BYTES);
            out = allocate.apply((long) batch * Integer.BYTES + (long) batch * request.logprobsBytes()
                    + (long) batch * config.vocab() * F);
            a = model.new Activations(Math.max(prompt, batch), batch, allocate);
            keys = new Buffer[config.layers()];
            values = new Buffer[config.layers()];
            long cacheBytes = (long) cacheBlocks * model.kvBlockBytes();
            for (int l = 0; l < config.layers(); l++) {
                keys[l] = allocate.apply(cacheBytes);
                values[l] = allocate.apply(cacheBytes);
            }
            samplerKernel = greedy(request) ? null : samplerKernel(request);
        }

        /** Step 0: every prompt token of every sequence, then each sequence's first token. */
        void prefill(Orchestrator o) {
            int rows = 0;
            for (int length : promptLengths) {
                rows += length;
            }
            int[] position = new int[rows];
            int[][] rowTables = new int[rows][];
            int[] logitRows = new int[batch];
            MemorySegment tokens = MemorySegment.ofArray(new int[rows]);
            int r = 0;
            for (int b = 0; b < batch; b++) {
                int[] prompt = request.prompt(b);
                for (int p = 0; p < prompt.length; p++) {
                    position[r] = p;
                    rowTables[r] = tables[b];
                    tokens.setAtIndex(I32, r, prompt[p]);
                    r++;
                }
                logitRows[b] = r - 1;
            }
            o.upload(promptTokens.region(0, (long) rows * Integer.BYTES), tokens);
            int[] none = new int[batch];
            Arrays.fill(none, NO_TOKEN);
            o.upload(out.region(0, (long) batch * Integer.BYTES), MemorySegment.ofArray(none));
            step(o, 0, promptTokens, rows, position, rowTables, logitRows);
        }

        /** Step {@code k >= 1}: one row per sequence, at the position after its previous token. */
        void decode(Orchestrator o, int k) {
            int[] position = new int[batch];
            int[] rows = new int[batch];
            for (int b = 0; b < batch; b++) {
                position[b] = promptLengths[b] + k - 1;
                rows[b] = b;
            }
            step(o, k, input, batch, position, tables, rows);
        }

        private void step(Orchestrator o, int step, Buffer tokenSource, int rows, int[] position, int[][] rowTables,
                int[] logitRows) {
            model.forward(o, a, keys, values, tokenSource, rows, position, rowTables, logitRows);
            submitSample(o, step);
            o.endStep(request.logits() ? out.region()
                    : out.region(0, (long) batch * (Integer.BYTES + request.logprobsBytes())));
        }

        private void submitSample(Orchestrator o, int step) {
            List<Access> accesses = new ArrayList<>();
            int logitRegions = model.addLogitReads(accesses, a, batch);
            accesses.add(readWrite(out.region()));
            accesses.add(write(input.region()));
            o.submit(samplerKernel != null ? samplerKernel : kernels.greedySample,
                    Orchestrator.scalars(batch, logitRegions, request.stopToken(), step),
                    accesses.toArray(Access[]::new));
        }

        /**
         * The sample kernel of the greedy one's shape with the full sampler chain: one {@link Sampler}
         * per sequence, fed its prompt, drawing token {@code k} at step {@code k}. The samplers' state
         * lives on the heap, not in a region; the sample tasks of successive steps are ordered by
         * their read-write of {@code out}, so each sees the one before it.
         */
        private Kernel samplerKernel(LlamaRequest request) {
            int vocab = config.vocab();
            Sampler[] samplers = new Sampler[batch];
            for (int b = 0; b < batch; b++) {
                SamplerConfig sc = request.sampler();
                samplers[b] = new Sampler(b == 0 ? sc : sc.toBuilder().seed(sc.seed() + b).build(), vocab,
                        request.grammar() == null ? null : request.grammar().matcher(), request.topLogprobs());
                samplers[b].acceptPrompt(request.prompt(b));
            }
            int recordBytes = request.logprobsBytes();
            long logitsAt = (long) batch * (Integer.BYTES + recordBytes);
            if (recordBytes == 0) {
                return Kernel.of("sample", c -> {
                    int n = (int) c.scalar(0);
                    int blockCount = (int) c.scalar(1);
                    int stop = (int) c.scalar(2);
                    LlamaKernels.sampleEach(c, n, blockCount, stop, vocab, logitsAt, (out, row, b) -> samplers[b].sample(out, row));
                });
            }
            // With logprobs: each sequence's record follows the token ints (a FINISHED sequence's stays as it was).
            return Kernel.of("sample", c -> {
                int n = (int) c.scalar(0);
                int blockCount = (int) c.scalar(1);
                int stop = (int) c.scalar(2);
                LlamaKernels.sampleEach(c, n, blockCount, stop, vocab, logitsAt, (out, row, b) -> {
                    int token = samplers[b].sample(out, row);
                    samplers[b].lastLogprobs().writeTo(out, request.logprobsAt(b));
                    return token;
                });
            });
        }
    }
}
