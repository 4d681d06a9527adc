package dev.tandem.llm.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import org.junit.jupiter.api.Test;

/** The block pool alone: sequences of members that match, grow, register and leave, against a model. */
class KvBlockPoolTest {

    /** A member's table as the batcher keeps it: blocks, the prefix registered, the chain's last key. */
    static final class Seq {
        final int[] tokens;
        final List<Integer> table = new ArrayList<>();
        int registered;
        KvBlockPool.Key lastKey;

        Seq(int[] tokens) {
            this.tokens = tokens;
        }
    }

    @Property(tries = 200)
    void everyBlockComesBackFreeOrCachedAndSharedContentIsExact(@ForAll("seeds") long seed,
            @ForAll @IntRange(min = 4, max = 24) int blocks) {
        Random random = new Random(seed);
        int blockSize = 4;
        KvBlockPool pool = new KvBlockPool(blocks, blockSize, true);
        List<Seq> live = new ArrayList<>();
        // What each block holds, as the members wrote it: position-prefix tokens of the block.
        int[][] content = new int[blocks][];
        for (int op = 0; op < 300; op++) {
            int choice = random.nextInt(3);
            if (choice == 0 && pool.held() + 3 <= blocks) {
                int[] tokens = new int[blockSize * (1 + random.nextInt(3)) + random.nextInt(blockSize)];
                for (int i = 0; i < tokens.length; i++) {
                    tokens[i] = random.nextInt(2); // few distinct prefixes: many hits
                }
                Seq s = new Seq(tokens);
                int[] shared = pool.match(tokens, (tokens.length - 1) / blockSize);
                for (int j = 0; j < shared.length; j++) {
                    // A shared block holds exactly the tokens of the prefix it is matched for.
                    assertThat(content[shared[j]]).containsExactly(
                            Arrays.copyOfRange(tokens, 0, (j + 1) * blockSize));
                    s.table.add(shared[j]);
                }
                s.registered = shared.length;
                s.lastKey = shared.length == 0 ? null : pool.key(shared[shared.length - 1]);
                live.add(s);
            } else if (choice == 1 && !live.isEmpty()) {
                Seq s = live.get(random.nextInt(live.size()));
                int full = s.tokens.length / blockSize;
                if (s.table.size() < Math.ceilDiv(s.tokens.length, blockSize) && pool.held() < blocks) {
                    int b = pool.allocate();
                    s.table.add(b);
                    int j = s.table.size() - 1;
                    content[b] = Arrays.copyOfRange(s.tokens, 0, Math.min(s.tokens.length, (j + 1) * blockSize));
                }
                while (s.registered < Math.min(full, s.table.size())) {
                    s.lastKey = pool.register(s.table.get(s.registered), s.lastKey, s.tokens,
                            s.registered * blockSize);
                    s.registered++;
                }
            } else if (!live.isEmpty()) {
                Seq s = live.remove(random.nextInt(live.size()));
                s.table.forEach(pool::release);
            }
            assertThat(pool.held()).isLessThanOrEqualTo(blocks);
        }
        for (Seq s : live) {
            s.table.forEach(pool::release);
        }
        pool.checkIdle();
    }

    @net.jqwik.api.Provide
    net.jqwik.api.Arbitrary<Long> seeds() {
        return net.jqwik.api.Arbitraries.longs();
    }

    @Test
    void aRegisteredBlockOutlivesItsMemberUntilTheSpaceIsNeeded() {
        KvBlockPool pool = new KvBlockPool(2, 2, true);
        int[] tokens = {1, 2, 3};
        int a = pool.allocate();
        pool.register(a, null, tokens, 0);
        pool.release(a);
        assertThat(pool.cached()).isEqualTo(1);
        int[] again = pool.match(tokens, 1);
        assertThat(again).containsExactly(a);
        pool.release(a);
        int b = pool.allocate(); // the free one first
        assertThat(b).isNotEqualTo(a);
        int c = pool.allocate(); // then the cached one, forgotten
        assertThat(c).isEqualTo(a);
        assertThat(pool.evictions()).isEqualTo(1);
        assertThat(pool.match(tokens, 1)).isEmpty();
        pool.release(b);
        pool.release(c);
        pool.checkIdle();
        Set<Integer> seen = new HashSet<>(List.of(pool.allocate(), pool.allocate()));
        assertThat(seen).hasSize(2);
        assertThatThrownBy(pool::allocate).isInstanceOf(IllegalStateException.class);
    }

    @Test
    void equalContentRegisteredTwiceKeepsOneChain() {
        KvBlockPool pool = new KvBlockPool(4, 2, true);
        int[] tokens = {5, 6, 7, 8, 9};
        int a = pool.allocate();
        KvBlockPool.Key ka = pool.register(a, null, tokens, 0);
        int b = pool.allocate();
        KvBlockPool.Key kb = pool.register(b, null, tokens, 0); // computed twice concurrently
        assertThat(kb).isSameAs(ka);
        int a2 = pool.allocate();
        pool.register(a2, kb, tokens, 2);
        assertThat(pool.match(tokens, 2)).containsExactly(a, a2);
        assertThatThrownBy(() -> pool.register(a, null, tokens, 0)).isInstanceOf(IllegalStateException.class);
    }

    @Test
    void blocksWhoseTokensHashAlikeAreStillToldApart() {
        // Arrays.hashCode({0, 31}) == Arrays.hashCode({1, 0}): only the tokens themselves may decide.
        KvBlockPool pool = new KvBlockPool(2, 2, true);
        int a = pool.allocate();
        pool.register(a, null, new int[] {0, 31}, 0);
        pool.release(a);
        assertThat(java.util.Arrays.hashCode(new int[] {0, 31})).isEqualTo(java.util.Arrays.hashCode(new int[] {1, 0}));
        assertThat(pool.match(new int[] {1, 0, 5}, 1)).isEmpty();
        assertThat(pool.match(new int[] {0, 31, 5}, 1)).containsExactly(a);
    }

    @Test
    void aPoolNeedsBlocksOfPositions() {
        assertThatThrownBy(() -> new KvBlockPool(0, 16, true)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new KvBlockPool(4, 0, true)).isInstanceOf(IllegalArgumentException.class);
        assertThat(new KvBlockPool(1, 1, true).blocks()).isEqualTo(1);
    }

    @Test
    void withCachingOffNothingMatchesAndReleasedBlocksAreFree() {
        KvBlockPool pool = new KvBlockPool(2, 2, false);
        int a = pool.allocate();
        assertThat(pool.register(a, null, new int[] {1, 2}, 0)).isNull();
        pool.release(a);
        assertThat(pool.match(new int[] {1, 2, 3}, 1)).isEmpty();
        assertThat(pool.cached()).isZero();
        assertThatThrownBy(() -> pool.release(a)).isInstanceOf(IllegalStateException.class);
        pool.checkIdle();
    }
}
