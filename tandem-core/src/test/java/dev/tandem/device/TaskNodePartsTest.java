package dev.tandem.device;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tandem.Kernel;
import java.util.ArrayList;
import java.util.List;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import org.junit.jupiter.api.Test;

/** The order in which the opener and the helpers of a split task claim its parts. */
class TaskNodePartsTest {

    private static TaskNode opened(int count, int units) {
        TaskNode task = new TaskNode(Kernel.of("split", c -> { }), null, null, null, 0, null);
        task.openParts(count, units);
        return task;
    }

    private static List<Integer> claims(TaskNode task, boolean opener, int n) {
        List<Integer> parts = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            parts.add(task.claimPart(opener));
        }
        return parts;
    }

    @Test
    void eachWalksItsOwnShareUpwardsThenTheOthersFromTheBack() {
        TaskNode task = opened(10, 2);
        assertThat(claims(task, true, 3)).containsExactly(0, 1, 2);
        assertThat(claims(task, false, 2)).containsExactly(5, 6);
        assertThat(claims(task, true, 4)).as("the opener's share, then the helpers' last parts")
                .containsExactly(3, 4, 9, 8);
        assertThat(claims(task, false, 2)).containsExactly(7, -1);
        assertThat(task.claimPart(true)).isEqualTo(-1);
    }

    @Test
    void aHelperAloneTakesTheOpenersShareFromTheBack() {
        TaskNode task = opened(6, 2);
        assertThat(claims(task, false, 7)).containsExactly(3, 4, 5, 2, 1, 0, -1);
    }

    @Test
    void theOpenersShareIsItsUnitsPart() {
        assertThat(claims(opened(7, 2), true, 5)).as("ceil(7 / 2) = 4 of its own").containsExactly(0, 1, 2, 3, 6);
        assertThat(claims(opened(9, 3), false, 1)).as("helpers start after 3").containsExactly(3);
        assertThat(claims(opened(4, 1), true, 5)).as("one unit: all its own").containsExactly(0, 1, 2, 3, -1);
        assertThat(claims(opened(4, 1), false, 5)).as("a helper of one unit takes from the back")
                .containsExactly(3, 2, 1, 0, -1);
        assertThat(claims(opened(2, 8), false, 2)).containsExactly(1, 0);
    }

    @Test
    void theMostPartsFitTheRanges() {
        TaskNode task = opened(Kernel.MAX_PARTS, 2);
        assertThat(task.claimPart(false)).isEqualTo(32768);
        assertThat(task.claimPart(true)).isEqualTo(0);
        int claimed = 2;
        int last = -2;
        for (int part; (part = task.claimPart(false)) >= 0; claimed++) {
            last = part;
        }
        assertThat(claimed).isEqualTo(Kernel.MAX_PARTS);
        assertThat(last).as("the helper ends on the opener's second part").isEqualTo(1);
    }

    @Test
    void badCountsAndUnitsAreRefused() {
        TaskNode task = new TaskNode(Kernel.of("split", c -> { }), null, null, null, 0, null);
        assertThatThrownBy(() -> task.openParts(1, 2)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("count = 1 must be in [2, 65535]");
        assertThatThrownBy(() -> task.openParts(Kernel.MAX_PARTS + 1, 2))
                .hasMessageContaining("count = 65536");
        assertThatThrownBy(() -> task.openParts(4, 0)).hasMessageContaining("units = 0 >= 1");
    }

    /** Whoever claims in whatever order, every part is claimed exactly once, then only -1. */
    @Property(tries = 300)
    void everyPartOnce(@ForAll @IntRange(min = 2, max = 300) int count, @ForAll @IntRange(min = 1, max = 4) int units,
            @ForAll long order) {
        TaskNode task = opened(count, units);
        boolean[] seen = new boolean[count];
        java.util.Random random = new java.util.Random(order);
        for (int i = 0; i < count; i++) {
            int part = task.claimPart(random.nextBoolean());
            assertThat(part).isBetween(0, count - 1);
            assertThat(seen[part]).as("part " + part + " claimed twice").isFalse();
            seen[part] = true;
        }
        assertThat(task.claimPart(true)).isEqualTo(-1);
        assertThat(task.claimPart(false)).isEqualTo(-1);
    }
}
