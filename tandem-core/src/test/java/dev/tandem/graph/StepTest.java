package dev.tandem.graph;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tandem.device.TaskNode;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Step counting with batched decrements: done once at zero, room once per downward crossing. */
class StepTest {

    static final class Owner implements StepOwner {
        final List<String> events = new ArrayList<>();

        @Override public long requestId() { return 1; }
        @Override public boolean isRunning() { return true; }
        @Override public int laneOf(Step step) { return 4; }
        @Override public void taskFailed(TaskNode task, Throwable cause) {}
        @Override public void roomInStep(Step step) { events.add("room at " + step.inFlight()); }
        @Override public void stepDone(Step step) { events.add("done"); }
    }

    @Test
    void aBatchThatCrossesTheLowWaterMarkReportsRoomOnceAndTheLastReportsDone() {
        Owner owner = new Owner();
        Step step = new Step(owner, 0, 10); // room once in flight drops to 10 or below
        step.addTasks(20);
        step.tasksDone(5); // 15 in flight
        assertThat(owner.events).isEmpty();
        step.tasksDone(7); // 8 in flight: crossed 10
        assertThat(owner.events).containsExactly("room at 8");
        step.tasksDone(8); // 0 in flight, the build guard still held
        assertThat(owner.events).containsExactly("room at 8");
        assertThat(step.isDone()).isFalse();
        step.close(null);
        assertThat(owner.events).containsExactly("room at 8", "done");
        assertThat(step.isDone()).isTrue();
    }

    @Test
    void aBatchEndingExactlyAtTheMarkReportsRoomAndOneStartingThereDoesNot() {
        Owner owner = new Owner();
        Step step = new Step(owner, 0, 10);
        step.addTasks(14);
        step.tasksDone(4); // 14 → 10 in flight: at the mark
        assertThat(owner.events).containsExactly("room at 10");
        step.tasksDone(3); // from the mark downwards: no second report
        assertThat(owner.events).containsExactly("room at 10");
        step.addTasks(10); // 17 in flight again
        step.tasksDone(1); // 16
        assertThat(owner.events).containsExactly("room at 10");
        step.tasksDone(6); // 10: a second crossing
        assertThat(owner.events).containsExactly("room at 10", "room at 10");
    }

    @Test
    void theDecrementThatReachesZeroReportsDoneEvenInABatchWithTheGuardDroppedFirst() {
        Owner owner = new Owner();
        Step step = new Step(owner, 3);
        step.addTasks(3);
        step.close(null); // guard first: 3 remain
        assertThat(owner.events).isEmpty();
        step.tasksDone(2);
        assertThat(step.isDone()).isFalse();
        step.tasksDone(1);
        assertThat(owner.events).containsExactly("done");
        assertThat(step.isDone()).isTrue();
    }

    @Test
    void anUnboundedStepNeverReportsRoom() {
        Owner owner = new Owner();
        Step step = new Step(owner, 0);
        step.addTasks(1_000_000);
        step.tasksDone(999_999);
        step.tasksDone(1);
        assertThat(owner.events).isEmpty();
        step.close(null);
        assertThat(owner.events).containsExactly("done");
    }
}
