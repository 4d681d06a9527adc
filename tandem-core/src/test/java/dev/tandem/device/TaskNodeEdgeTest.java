package dev.tandem.device;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tandem.Kernel;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** A task is its own edge for its first wiring; later ones, and a wiring that found its predecessor finished, are not. */
class TaskNodeEdgeTest {
    private static final Kernel NOOP = Kernel.of("noop", context -> {});
    private final List<TaskNode> queued = new ArrayList<>();
    private final TaskNode.ReadySink sink = queued::add;

    private static TaskNode node(long index) {
        return new TaskNode(NOOP, null, null, null, index, null);
    }

    @Test
    void aTaskIsFinishedOnlyOnceItsFinishRanAndIsNamedAfterItsKernel() {
        TaskNode p = node(0);
        TaskNode t = node(1);
        assertThat(p.name()).isEqualTo("noop");
        assertThat(p.isFinished()).isFalse();
        assertThat(p.wireTo(t)).isTrue();
        assertThat(p.publish()).isTrue();
        assertThat(p.isFinished()).as("published, not run").isFalse();
        assertThat(t.publish()).isFalse();
        assertThat(p.finish(sink)).isSameAs(t);
        assertThat(p.isFinished()).isTrue();
        assertThat(t.isFinished()).isFalse();
    }

    @Test
    void aWiringToAFinishedPredecessorLeavesTheOwnLinkFreeForTheNext() {
        TaskNode done = node(0);
        done.finish(sink);
        TaskNode p1 = node(1);
        TaskNode p2 = node(2);
        TaskNode t = node(3);
        assertThat(done.wireTo(t)).isFalse();
        assertThat(p1.wireTo(t)).isTrue(); // t itself is the link
        assertThat(p2.wireTo(t)).isTrue(); // a fresh edge
        assertThat(t.publish()).isFalse();
        assertThat(p1.finish(sink)).isNull();
        assertThat(t.pendingCount()).isEqualTo(1);
        assertThat(p2.finish(sink)).isSameAs(t);
        assertThat(queued).isEmpty();
    }

    @Test
    void successorsThatAreTheirOwnLinksAreEachReleasedOnceAndUnlinked() {
        TaskNode p = node(0);
        TaskNode other = node(9); // a second predecessor of successor 0, wired through a fresh edge
        TaskNode[] successors = new TaskNode[5];
        for (int i = 0; i < successors.length; i++) {
            successors[i] = node(i + 1);
            assertThat(p.wireTo(successors[i])).isTrue();
        }
        assertThat(other.wireTo(successors[0])).isTrue();
        for (TaskNode s : successors) {
            assertThat(s.publish()).isFalse();
        }
        TaskNode first = p.finish(sink);
        assertThat(first).isNotNull();
        List<TaskNode> ready = new ArrayList<>(queued);
        ready.add(first);
        assertThat(ready).containsExactlyInAnyOrder(successors[1], successors[2], successors[3], successors[4]);
        for (TaskNode s : successors) {
            assertThat(s.edgeNext).as("released links are cleared").isNull();
        }
    }

    @Test
    void aTaskNothingWasWiredToIsReadyAtPublicationWithNothingPending() {
        TaskNode done = node(0);
        done.finish(sink);
        TaskNode alone = node(1);
        TaskNode afterFinished = node(2);
        assertThat(done.wireTo(afterFinished)).isFalse(); // not counted: no thread will release it
        assertThat(alone.publish()).isTrue();
        assertThat(afterFinished.publish()).isTrue();
        assertThat(alone.pendingCount()).isZero();
        assertThat(afterFinished.pendingCount()).isZero();
        assertThat(afterFinished.edgeNext).as("its own link is in no stack").isNull();
    }

    @Test
    void aWiredTaskWhosePredecessorsFinishedBeforePublicationIsReadyAtPublication() {
        TaskNode p = node(0);
        TaskNode t = node(1);
        assertThat(p.publish()).isTrue(); // an earlier batch's task, running
        assertThat(p.wireTo(t)).isTrue();
        assertThat(p.finish(sink)).as("still guarded").isNull();
        assertThat(t.pendingCount()).isEqualTo(TaskNode.GUARD - 1);
        assertThat(t.publish()).isTrue();
        assertThat(t.pendingCount()).isZero();
    }

    /**
     * A batch [p, t] with q→p (q of an earlier batch) and p→t, published last task first: t,
     * wired only to p of its own batch, drops its guard before p can run; p, wired to the
     * published q, drops it atomically. q's finish then releases p, and p's releases t.
     */
    @Test
    void aBatchPublishedLastTaskFirstReleasesEachTaskOnce() {
        TaskNode q = node(0);
        assertThat(q.publish()).isTrue();
        TaskNode p = node(1);
        TaskNode t = node(2);
        TaskNode u = node(3); // wired to q and to p: q is published, so an atomic drop
        assertThat(q.wireTo(p)).isTrue();
        assertThat(p.wireTo(t)).isTrue();
        assertThat(q.wireTo(u)).isTrue();
        assertThat(p.wireTo(u)).isTrue();
        assertThat(u.publish()).isFalse();
        assertThat(u.pendingCount()).isEqualTo(2);
        assertThat(t.publish()).isFalse();
        assertThat(t.pendingCount()).isEqualTo(1);
        assertThat(p.publish()).isFalse();
        TaskNode next = q.finish(sink);
        List<TaskNode> ready = new ArrayList<>(queued);
        ready.add(next);
        assertThat(ready).containsExactly(p);
        queued.clear();
        TaskNode afterP = p.finish(sink);
        ready = new ArrayList<>(queued);
        ready.add(afterP);
        assertThat(ready).containsExactlyInAnyOrder(t, u);
        assertThat(t.pendingCount()).isZero();
        assertThat(u.pendingCount()).isZero();
    }

    /**
     * A release that comes before a published task's wired successor is published is kept: the
     * successor's guard drop is atomic (its predecessor was published when wired), where a plain
     * write of its wired count would overwrite the release and leave it waiting forever.
     */
    @Test
    void aReleaseBeforePublicationFromAPublishedPredecessorIsKept() {
        TaskNode q = node(0);
        assertThat(q.publish()).isTrue();
        TaskNode p = node(1);
        TaskNode t = node(2);
        assertThat(q.wireTo(p)).isTrue();
        assertThat(p.publish()).isFalse(); // p's batch ends here: t is in the next one
        assertThat(p.wireTo(t)).isTrue();
        assertThat(q.finish(sink)).isSameAs(p);
        assertThat(p.finish(sink)).as("t still guarded").isNull();
        assertThat(t.publish()).as("its one predecessor finished").isTrue();
        assertThat(t.pendingCount()).isZero();
    }

    @Test
    void theFirstWiringLinksTheTaskItselfOntoTheStack() {
        TaskNode p = node(0);
        TaskNode below = node(1);
        TaskNode t = node(2);
        assertThat(p.wireTo(below)).isTrue();
        assertThat(p.wireTo(t)).isTrue();
        assertThat(t.edgeNext).as("t is its own link, above the one before").isSameAs(below);
        TaskNode q = node(3);
        assertThat(q.wireTo(t)).isTrue();
        assertThat(t.edgeNext).as("a later wiring takes a fresh edge").isSameAs(below);
        assertThat(q.hasSuccessor(t)).isTrue();
    }
}
