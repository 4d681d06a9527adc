package dev.tandem.llm.sampling;

import dev.tandem.llm.grammar.GrammarMatcher;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * Picks the tokens of one sequence from its logits, as {@link SamplerConfig} says; one instance per
 * sequence, used by one thread at a time (a device task on a core thread, say). After the
 * constructor it allocates nothing: every scratch array is sized by the vocabulary up front.
 *
 * <h2>The chain</h2>
 *
 * The order of llama.cpp's default chain ({@code common_params_sampling::samplers}: penalties, DRY,
 * top-n-sigma, top-k, typical-p, top-p, min-p, XTC, temperature, then the draw), less the samplers
 * tandem does not have:
 *
 * <ol>
 *   <li><b>the logit bias</b> ({@link SamplerConfig#logitBias()}, OpenAI's {@code logit_bias}): added to
 *       its tokens' logits;</li>
 *   <li><b>the grammar</b>, with a {@link GrammarMatcher}: every token it does not allow next gets
 *       {@code -Infinity}, before anything else, so the chain below only ever picks an allowed
 *       token (constrained decoding); the drawn token then moves the matcher on;
 *   <li><b>penalties</b>, on each token {@code t} seen {@code c > 0} times in the window:
 *       {@code l = l > 0 ? l / repetitionPenalty : l * repetitionPenalty}, then
 *       {@code l -= c * frequencyPenalty + presencePenalty} (float arithmetic, in that order);
 *   <li>if {@code temperature == 0}: the largest penalised logit, the first index on ties. Else
 *       order the tokens by logit, largest first, ties by index (smaller first), and keep a prefix:
 *   <li><b>top-k</b>: the first {@code topK};
 *   <li><b>top-p</b>: the shortest prefix of those whose mass reaches {@code topP} of theirs;
 *   <li><b>min-p</b>: of those, the ones whose {@code exp(l - max) >= minP};
 *   <li><b>temperature and draw</b>: weights {@code exp((l - max) / temperature)} over the kept
 *       tokens; the token is the first kept one, in index order, at which the running weight exceeds
 *       {@code u} times the total, {@code u} uniform in [0, 1) from {@link #drawBits drawBits(seed, k)}
 *       for token {@code k}.
 * </ol>
 *
 * Top-p and min-p see the distribution at temperature 1, as in llama.cpp, where temperature comes
 * last. Masses and weights are sums of fixed-point weights ({@code floor(x * 2^40)} of each
 * {@code x in [0, 1]}), so they are exact and the same in any order: this sampler, which sorts only
 * the top-k (or a widening band below the largest logit) and never the vocabulary, agrees token for
 * token with {@code SamplerReference} (the reference package), which sorts it all.
 *
 * <h2>The penalty window</h2>
 *
 * The last {@code repeatLastN} tokens the sequence has {@linkplain #accept accepted}, after the
 * prompt's last ones when {@link SamplerConfig#penalizePrompt()} ({@link #acceptPrompt}). Presence
 * and frequency count within that window too (llama.cpp's semantics; OpenAI counts the whole
 * output: use a window as long as the output for that).
 *
 * <h2>Log-probabilities</h2>
 *
 * With {@code topLogprobs >= 0}, each draw also records {@link #lastLogprobs()}: the drawn token's
 * log-probability and the {@code topLogprobs} most likely tokens', from the log-softmax of the
 * <em>raw</em> logits (before the grammar's mask, the penalties and the temperature: the model's
 * own distribution, as OpenAI reports it). Without it nothing of this is computed.
 *
 * <h2>Reproducibility</h2>
 *
 * Token {@code k} (0 is the first generated) is drawn with {@code drawBits(seed, k)} only, so a
 * sequence gives the same tokens whether it runs alone or in a batch; give each sequence of a batch
 * its own seed for different samples.
 */
public final class Sampler {

    /** The most tokens a vocabulary may have: fixed-point sums stay below {@code 2^63}. */
    public static final int MAX_VOCAB = 1 << 22;

    static final double FIXED_ONE = 0x1p40;

    private static final double[] BANDS = {8, 32, 128};

    private final SamplerConfig config;
    private final int vocab;
    /** The logit bias as arrays (its map would allocate an iterator on every draw). */
    private final int[] biasTokens;
    private final float[] biasValues;
    private final float[] work;
    private final long[] keys;
    private final int[] window;
    private final long[] windowSorted;
    private int windowStart;
    private int windowSize;
    private long position;
    private final GrammarMatcher grammar;
    private final int topLogprobs;
    private final int[] topIds;
    private final float[] topValues;
    private double logSumExp;
    private TokenLogprobs lastLogprobs;

    /** A sampler for a vocabulary of {@code vocab} tokens, with an empty window, at token 0. */
    public Sampler(SamplerConfig config, int vocab) {
        this(config, vocab, null, -1);
    }

    /**
     * A sampler that keeps its tokens in {@code grammar} (null: unconstrained) and records each
     * token's log-probabilities with {@code topLogprobs} alternatives ({@code -1}: none recorded).
     *
     * @throws IllegalArgumentException when the grammar's vocabulary is not of {@code vocab} tokens, or
     *         {@code topLogprobs} is outside {@code [-1, } {@link TokenLogprobs#MAX_TOP}{@code ]}
     */
    public Sampler(SamplerConfig config, int vocab, GrammarMatcher grammar, int topLogprobs) {
        if (config == null) {
            throw new IllegalArgumentException("config must not be null");
        }
        if (vocab < 1 || vocab > MAX_VOCAB) {
            throw new IllegalArgumentException("vocab = " + vocab + " must be in [1, " + MAX_VOCAB + "]");
        }
        this.config = config;
        this.vocab = vocab;
        this.biasTokens = config.logitBias().keySet().stream().filter(t -> t < vocab).mapToInt(Integer::intValue)
                .sorted().toArray();
        this.biasValues = new float[biasTokens.length];
        for (int i = 0; i < biasTokens.length; i++) {
            biasValues[i] = config.logitBias().get(biasTokens[i]);
        }
        this.work = new float[vocab];
        this.keys = new long[vocab];
        this.window = new int[config.repeatLastN()];
        this.windowSorted = new long[config.repeatLastN()];
        if (grammar != null && grammar.grammar().vocabulary().size() != vocab) {
            throw new IllegalArgumentException("the grammar is compiled for a vocabulary of "
                    + grammar.grammar().vocabulary().size() + " tokens, the sampler's has " + vocab);
        }
        if (topLogprobs < -1 || topLogprobs > TokenLogprobs.MAX_TOP) {
            throw new IllegalArgumentException("topLogprobs = " + topLogprobs + " must be in [-1, "
                    + TokenLogprobs.MAX_TOP + "] (-1: none)");
        }
        this.grammar = grammar;
        this.topLogprobs = topLogprobs;
        this.topIds = new int[Math.max(0, topLogprobs)];
        this.topValues = new float[Math.max(0, topLogprobs)];
    }

    /** The grammar this sampler keeps to, or null. */
    public GrammarMatcher grammar() {
        return grammar;
    }

    /** Alternatives recorded per token, or -1 when log-probabilities are not recorded. */
    public int topLogprobs() {
        return topLogprobs;
    }

    /**
     * The log-probabilities of the token drawn last (see the class comment), or null before the
     * first draw or when they are not recorded.
     */
    public TokenLogprobs lastLogprobs() {
        return lastLogprobs;
    }

    public SamplerConfig config() {
        return config;
    }

    public int vocab() {
        return vocab;
    }

    /** The index of the next token drawn: how many tokens have been accepted since the prompt. */
    public long position() {
        return position;
    }

    /** Forgets the window and returns to token 0 (and the grammar to its start). */
    public void reset() {
        if (grammar != null) {
            grammar.reset();
        }
        lastLogprobs = null;
        windowStart = 0;
        windowSize = 0;
        position = 0;
    }

    /**
     * Feeds the prompt's last {@code repeatLastN} tokens to the penalty window when the
     * configuration penalises the prompt; does not move {@link #position()}.
     */
    public void acceptPrompt(int[] prompt) {
        if (prompt == null) {
            throw new IllegalArgumentException("prompt must not be null");
        }
        for (int i = 0; i < prompt.length; i++) {
            checkToken(prompt[i], "prompt token " + i);
        }
        if (!config.penalizePrompt()) {
            return;
        }
        for (int i = Math.max(0, prompt.length - window.length); i < prompt.length; i++) {
            push(prompt[i]);
        }
    }

    /**
     * Records a generated token (one drawn here, or forced by the caller) and moves to the next.
     *
     * @throws IllegalArgumentException when the grammar does not allow it (nothing changes then)
     */
    public void accept(int token) {
        checkToken(token, "token");
        if (grammar != null) {
            grammar.accept(token);
        }
        push(token);
        position++;
    }

    /** Draws token {@link #position()} from {@code vocab} logits at {@code logits[offset]}, and accepts it. */
    public int sample(float[] logits, int offset) {
        if (logits == null || offset < 0 || offset > logits.length - vocab) {
            throw new IllegalArgumentException("logits must hold vocab = " + vocab + " floats from offset " + offset);
        }
        System.arraycopy(logits, offset, work, 0, vocab);
        int token = sampleWork();
        if (topLogprobs >= 0) {
            recordLogprobs(token, logits[offset + token]);
        }
        return token;
    }

    /** Draws token {@link #position()} from {@code vocab} f32 logits at byte {@code offset}, and accepts it. */
    public int sample(MemorySegment logits, long offset) {
        if (logits == null || offset < 0 || offset > logits.byteSize() - (long) vocab * Float.BYTES) {
            throw new IllegalArgumentException("logits must hold vocab = " + vocab + " floats from byte " + offset);
        }
        MemorySegment.copy(logits, ValueLayout.JAVA_FLOAT_UNALIGNED, offset, work, 0, vocab);
        int token = sampleWork();
        if (topLogprobs >= 0) {
            recordLogprobs(token, logits.get(ValueLayout.JAVA_FLOAT_UNALIGNED, offset + (long) token * Float.BYTES));
        }
        return token;
    }

    /**
     * The 64 random bits of the draw of token {@code k}: a counter-based mix of the seed and the
     * token's index (SplitMix64's finaliser of {@code seed + (k + 1) * golden}), so any token's draw
     * can be computed without the ones before it.
     */
    public static long drawBits(long seed, long k) {
        long z = seed + (k + 1) * 0x9E3779B97F4A7C15L;
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }

    private int sampleWork() {
        if (topLogprobs >= 0) {
            rawStatistics();
        }
        for (int i = 0; i < biasTokens.length; i++) {
            work[biasTokens[i]] += biasValues[i];
        }
        if (grammar != null) {
            grammar.applyMask(work, 0);
        }
        float max = checkLogits();
        if (config.penalizes() && windowSize > 0) {
            applyPenalties();
            max = checkLogits();
        }
        int token = config.greedy() ? argmax() : draw(max);
        accept(token);
        return token;
    }

    /**
     * Of the raw logits in {@code work}: their log-sum-exp, and the {@code topLogprobs} largest
     * (ties: the smaller index) in {@code topIds}/{@code topValues}, largest first.
     */
    private void rawStatistics() {
        float max = checkLogits();
        double sum = 0;
        int n = topIds.length;
        int filled = 0;
        for (int i = 0; i < vocab; i++) {
            float l = work[i];
            sum += Math.exp((double) l - max);
            if (n > 0 && (filled < n || l > topValues[filled - 1])) {
                int j = filled < n ? filled++ : n - 1;
                while (j > 0 && topValues[j - 1] < l) {
                    topValues[j] = topValues[j - 1];
                    topIds[j] = topIds[j - 1];
                    j--;
                }
                topValues[j] = l;
                topIds[j] = i;
            }
        }
        logSumExp = max + Math.log(sum);
    }

    private void recordLogprobs(int token, float raw) {
        int n = Math.min(topIds.length, vocab);
        float[] lps = new float[n];
        for (int i = 0; i < n; i++) {
            lps[i] = (float) (topValues[i] - logSumExp);
        }
        lastLogprobs = new TokenLogprobs(token, (float) (raw - logSumExp), java.util.Arrays.copyOf(topIds, n), lps);
    }

    /** The largest logit; throws on NaN, +Infinity, or nothing above -Infinity. */
    private float checkLogits() {
        float max = Float.NEGATIVE_INFINITY;
        for (int i = 0; i < vocab; i++) {
            float l = work[i];
            if (Float.isNaN(l) || l == Float.POSITIVE_INFINITY) {
                throw new IllegalArgumentException("logit " + i + " = " + l + " must be finite or -Infinity");
            }
            if (l > max) {
                max = l;
            }
        }
        if (max == Float.NEGATIVE_INFINITY) {
            throw new IllegalArgumentException("every logit is -Infinity: nothing to sample");
        }
        return max;
    }

    private void applyPenalties() {
        for (int j = 0; j < windowSize; j++) {
            windowSorted[j] = window[(windowStart + j) % window.length];
        }
        LongSorts.descending(windowSorted, windowSize);
        float repeat = config.repetitionPenalty();
        float frequency = config.frequencyPenalty();
        float presence = config.presencePenalty();
        int j = 0;
        while (j < windowSize) {
            int token = (int) windowSorted[j];
            int count = 0;
            while (j < windowSize && windowSorted[j] == token) {
                count++;
                j++;
            }
            float l = work[token];
            l = l > 0 ? l / repeat : l * repeat;
            l -= count * frequency + presence;
            work[token] = l;
        }
    }

    private int argmax() {
        int best = 0;
        for (int i = 1; i < vocab; i++) {
            if (work[i] > work[best]) {
                best = i;
            }
        }
        return best;
    }

    private int draw(float max) {
        int k = config.topK() > 0 ? Math.min(config.topK(), vocab) : vocab;
        boolean cutP = config.topP() < 1f;
        boolean cutM = config.minP() > 0f;
        int kept;
        long cutoff;
        if (k < vocab) {
            selectTopK(k);
            kept = cutP || cutM ? walk(k, max, cutP ? target(totalWeight(k, max)) : 0) : k;
            if (kept < 0) {
                kept = k;
            }
            cutoff = keys[kept - 1];
        } else if (!cutP && !cutM) {
            kept = vocab;
            cutoff = Long.MIN_VALUE;
        } else {
            long target = cutP ? target(totalWeightOfAll(max)) : 0;
            kept = -1;
            for (int band = 0; kept < 0; band++) {
                float floor = band < BANDS.length ? (float) (max - BANDS[band]) : Float.NEGATIVE_INFINITY;
                int gathered = gather(floor);
                LongSorts.descending(keys, gathered);
                kept = walk(gathered, max, target);
                if (kept < 0 && gathered == vocab) {
                    kept = vocab;
                }
            }
            cutoff = keys[kept - 1];
        }
        return drawFrom(kept, cutoff, max);
    }

    /** Leaves the keys of the {@code k} largest logits in {@code keys[0, k)}, largest first. */
    private void selectTopK(int k) {
        for (int i = 0; i < k; i++) {
            keys[i] = key(work[i], i);
        }
        LongSorts.minHeap(keys, k);
        for (int i = k; i < vocab; i++) {
            long key = key(work[i], i);
            if (key > keys[0]) {
                keys[0] = key;
                LongSorts.siftDown(keys, 0, k);
            }
        }
        LongSorts.descendingFromMinHeap(keys, k);
    }

    /** Gathers the keys of every logit {@code >= floor} into {@code keys}; returns how many. */
    private int gather(float floor) {
        int n = 0;
        for (int i = 0; i < vocab; i++) {
            if (work[i] >= floor) {
                keys[n++] = key(work[i], i);
            }
        }
        return n;
    }

    private long totalWeight(int k, float max) {
        long total = 0;
        for (int j = 0; j < k; j++) {
            total += weight(Math.exp((double) work[index(keys[j])] - max));
        }
        return total;
    }

    private long totalWeightOfAll(float max) {
        long total = 0;
        for (int i = 0; i < vocab; i++) {
            total += weight(Math.exp((double) work[i] - max));
        }
        return total;
    }

    private long target(long total) {
        return (long) Math.ceil((double) config.topP() * total);
    }

    /**
     * Walks the sorted keys {@code [0, n)} applying top-p (when {@code target > 0}) and min-p;
     * returns how many are kept, or -1 if neither cut falls within them.
     */
    private int walk(int n, float max, long target) {
        boolean cutP = config.topP() < 1f;
        double minP = config.minP();
        long mass = 0;
        for (int j = 0; j < n; j++) {
            double x = Math.exp((double) work[index(keys[j])] - max);
            if (x < minP) {
                return j;
            }
            mass += weight(x);
            if (cutP && mass >= target) {
                return j + 1;
            }
        }
        return -1;
    }

    /** The draw over the tokens whose key is at least {@code cutoff} ({@code kept} of them), in index order. */
    private int drawFrom(int kept, long cutoff, float max) {
        double temperature = config.temperature();
        long u;
        if (kept <= vocab >>> 3) {
            // Few kept: put their indices in ascending order in keys[0, kept) (as -index, descending).
            for (int j = 0; j < kept; j++) {
                keys[j] = -(long) index(keys[j]);
            }
            LongSorts.descending(keys, kept);
            long total = 0;
            for (int j = 0; j < kept; j++) {
                total += weight(Math.exp(((double) work[(int) -keys[j]] - max) / temperature));
            }
            u = Math.unsignedMultiplyHigh(drawBits(config.seed(), position), total);
            long running = 0;
            for (int j = 0; j < kept; j++) {
                int i = (int) -keys[j];
                running += weight(Math.exp(((double) work[i] - max) / temperature));
                if (running > u) {
                    return i;
                }
            }
        } else {
            long total = 0;
            for (int i = 0; i < vocab; i++) {
                if (key(work[i], i) >= cutoff) {
                    total += weight(Math.exp(((double) work[i] - max) / temperature));
                }
            }
            u = Math.unsignedMultiplyHigh(drawBits(config.seed(), position), total);
            long running = 0;
            for (int i = 0; i < vocab; i++) {
                if (key(work[i], i) >= cutoff) {
                    running += weight(Math.exp(((double) work[i] - max) / temperature));
                    if (running > u) {
                        return i;
                    }
                }
            }
        }
        throw new IllegalStateException("draw " + u + " fell past the kept mass; kept = " + kept);
    }

    /** {@code floor(x * 2^40)} for {@code x} in [0, 1]. */
    static long weight(double x) {
        return (long) (x * FIXED_ONE);
    }

    /**
     * A key whose order is the chain's: larger for a larger logit, and for the smaller index among
     * equal logits ({@code -0.0} is below {@code 0.0}, as {@link Float#compare} has it).
     */
    static long key(float logit, int index) {
        int bits = Float.floatToRawIntBits(logit);
        int ordered = bits ^ ((bits >> 31) & 0x7FFFFFFF);
        return ((long) ordered << 32) | (~index & 0xFFFFFFFFL);
    }

    static int index(long key) {
        return ~(int) key;
    }

    private void push(int token) {
        int capacity = window.length;
        if (capacity == 0) {
            return;
        }
        if (windowSize < capacity) {
            window[(windowStart + windowSize) % capacity] = token;
            windowSize++;
        } else {
            window[windowStart] = token;
            windowStart = (windowStart + 1) % capacity;
        }
    }

    private void checkToken(int token, String what) {
        if (token < 0 || token >= vocab) {
            throw new IllegalArgumentException(what + " = " + token + " must be in [0, vocab = " + vocab + ")");
        }
    }

    @Override
    public String toString() {
        return "Sampler[" + config + ", vocab=" + vocab + ", position=" + position + ", window=" + windowSize + "]";
    }
}
