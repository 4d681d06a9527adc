package dev.tandem.cluster;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.function.ToDoubleFunction;
import java.util.function.ToLongFunction;

/**
 * The order in which a gateway offers a request to the workers that can serve it.
 *
 * <p><b>Affinity.</b> A prompt's key is a hash of its first {@link #BLOCK_TOKENS} tokens (the
 * whole prompt when shorter): prompts that share a system prefix share a key. The affine worker of
 * a key is the one of highest rendezvous weight {@code mix(key, worker)} (highest random weight
 * hashing, a consistent hash: a worker joining or leaving moves only the keys it wins or held).
 * It is offered the request first unless it is saturated; then the others follow, least
 * utilised first (ties by weight, so the order is a function of the inputs only).
 *
 * <p>Pure: it reads the loads it is given and nothing else.
 */
final class Routing {
    /** Tokens of a prompt that decide its worker: one KV-cache block of the batcher. */
    static final int BLOCK_TOKENS = 16;

    private Routing() {}

    /** The key of a prompt: FNV-1a over its first block of tokens, then mixed. */
    static long prefixKey(int[] prompt) {
        long h = 0xcbf29ce484222325L;
        int n = Math.min(BLOCK_TOKENS, prompt.length);
        for (int i = 0; i < n; i++) {
            h = (h ^ prompt[i]) * 0x100000001b3L;
        }
        return mix(h);
    }

    /**
     * The workers in the order to try them.
     *
     * @param key         the prompt's {@link #prefixKey}
     * @param workers     the eligible workers
     * @param identity    a stable id of a worker (its address), hashed for its weight
     * @param utilisation a worker's reported utilisation (see {@link WorkerProtocol.Load#utilisation()})
     * @param saturated   whether a worker has no free slot
     */
    static <W> List<W> order(long key, List<W> workers, ToLongFunction<W> identity,
            ToDoubleFunction<W> utilisation, java.util.function.Predicate<W> saturated) {
        List<W> rest = new ArrayList<>(workers);
        if (rest.isEmpty()) {
            return rest;
        }
        Comparator<W> byWeight = Comparator.comparingLong((W w) -> mix(key ^ identity.applyAsLong(w))).reversed();
        rest.sort(byWeight);
        List<W> order = new ArrayList<>(rest.size());
        W affine = rest.getFirst();
        if (!saturated.test(affine)) {
            order.add(affine);
            rest.removeFirst();
        }
        rest.sort(Comparator.comparingDouble(utilisation).thenComparing(byWeight));
        order.addAll(rest);
        return order;
    }

    /** The affine worker of {@code key} among {@code workers} (highest rendezvous weight), or null when none. */
    static <W> W affine(long key, List<W> workers, ToLongFunction<W> identity) {
        W best = null;
        long bestWeight = 0;
        for (W w : workers) {
            long weight = mix(key ^ identity.applyAsLong(w));
            if (best == null || weight > bestWeight) { // as order()'s sort: signed, the first of equals
                best = w;
                bestWeight = weight;
            }
        }
        return best;
    }

    /** SplitMix64's finalizer. */
    static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }
}
