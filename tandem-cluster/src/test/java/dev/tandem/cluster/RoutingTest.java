package dev.tandem.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

/** Prefix affinity by rendezvous hashing, and least-utilised fallback when the affine worker is full. */
class RoutingTest {
    /** A worker as routing sees it: an id, its utilisation, whether it is saturated. */
    record W(long id, double utilisation, boolean saturated) {}

    private static List<W> order(long key, List<W> workers) {
        return Routing.order(key, workers, W::id, W::utilisation, W::saturated);
    }

    private static int[] prompt(int first, int length) {
        return IntStream.range(0, length).map(i -> i == 0 ? 1 : first * 31 + i).toArray();
    }

    @Test
    void promptsSharingTheirFirstBlockShareAKeyAndOthersDoNot() {
        int[] system = prompt(7, Routing.BLOCK_TOKENS);
        int[] a = java.util.Arrays.copyOf(system, 40);
        int[] b = java.util.Arrays.copyOf(system, 60);
        b[50] = 99;
        assertThat(Routing.prefixKey(a)).isEqualTo(Routing.prefixKey(b)).isEqualTo(Routing.prefixKey(system));
        int[] c = system.clone();
        c[Routing.BLOCK_TOKENS - 1]++;
        assertThat(Routing.prefixKey(c)).isNotEqualTo(Routing.prefixKey(a));
    }

    @Test
    void aKeyGoesToOneWorkerWhateverTheOrderOrLoadOfTheOthers() {
        List<W> workers = List.of(new W(11, 0.5, false), new W(22, 0.1, false), new W(33, 0.9, false));
        for (long key = 0; key < 200; key++) {
            W first = order(key, workers).getFirst();
            assertThat(order(key, workers.reversed()).getFirst()).isEqualTo(first);
        }
    }

    @Test
    void keysSpreadOverTheWorkersAndAJoiningWorkerTakesOnlyItsShare() {
        List<W> three = List.of(new W(11, 0, false), new W(22, 0, false), new W(33, 0, false));
        List<W> four = new ArrayList<>(three);
        four.add(new W(44, 0, false));
        Map<Long, Integer> counts = new HashMap<>();
        int moved = 0;
        int keys = 3000;
        for (long key = 0; key < keys; key++) {
            long k = Routing.mix(key);
            W before = order(k, three).getFirst();
            W after = order(k, four).getFirst();
            counts.merge(before.id(), 1, Integer::sum);
            if (!before.equals(after)) {
                assertThat(after.id()).as("a key moves only to the new worker").isEqualTo(44);
                moved++;
            }
        }
        assertThat(counts.values()).allSatisfy(n -> assertThat(n).isBetween(keys / 3 - 200, keys / 3 + 200));
        assertThat(moved).isBetween(keys / 4 - 200, keys / 4 + 200);
    }

    @Test
    void aSaturatedAffineWorkerGoesLastAmongTheLeastUtilisedFirst() {
        List<W> idle = List.of(new W(11, 0, false), new W(22, 0, false), new W(33, 0, false));
        long key = 12345;
        W affine = order(key, idle).getFirst();
        List<W> loaded = idle.stream().map(w -> w.equals(affine) ? new W(w.id(), 1.0, true)
                : new W(w.id(), w.id() == idle.stream().filter(x -> !x.equals(affine)).findFirst().orElseThrow().id()
                        ? 0.75 : 0.25, false)).toList();
        List<W> order = order(key, loaded);
        assertThat(order).extracting(W::utilisation).containsExactly(0.25, 0.75, 1.0);
        assertThat(order.getLast().id()).isEqualTo(affine.id());
    }

    @Test
    void noWorkersNoOrder() {
        assertThat(order(1, List.of())).isEmpty();
    }
}
