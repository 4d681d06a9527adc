package dev.tandem.graph;

import dev.tandem.Region;
import dev.tandem.device.TaskGroup;
import dev.tandem.device.TaskNode;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * The tasks that produce one token of one request: the {@link TaskGroup} their device reports
 * to.
 *
 * <p>Implementation Overview. {@code remaining} counts the step's unfinished tasks plus one
 * build guard. The host adds the tasks of each publication batch ({@link #addTasks}) before
 * publishing them, while the guard is held, so the count cannot reach zero while the step is still being built; {@link #close}
 * drops the guard at {@code endStep}. The thread whose decrement brings the count to zero
 * (a core finishing the last task, or the host closing a step whose tasks already finished)
 * reports the step done to its owner, exactly once. The token bytes are written by the
 * step's readback task before that task's decrement, so the release/acquire pair of the
 * counter makes them visible to whoever sees the step done.
 *
 * <p><b>Room.</b> The host bounds the step's tasks in flight ({@code remaining − 1} once
 * published): at the bound it parks until they are down to a low-water mark, and the
 * decrement that brings them to that mark ({@code remaining} from {@code roomAt} = mark + 2,
 * final, to mark + 1) tells the owner there is room again ({@link StepOwner#roomInStep}). Decrements are by one, so every value is passed exactly once
 * per crossing; the check is a compare with a final field on the value the decrement returned,
 * so it costs the cores nothing else.
 */
public final class Step implements TaskGroup {
    private final StepOwner owner;
    private final long index;
    private Region tokenRegion; // host-only, set at endStep before close()
    private byte[] token; // written by the readback task; read after stepDone
    private volatile int remaining = 1;
    private volatile boolean done;
    private final int roomAt;

    /** A step without a bound on its tasks in flight. */
    public Step(StepOwner owner, long index) {
        this(owner, index, Integer.MAX_VALUE);
    }

    /** @param lowWater tasks in flight at which a host waiting for room is told there is room */
    public Step(StepOwner owner, long index, int lowWater) {
        this.owner = owner;
        this.index = index;
        this.roomAt = lowWater >= Integer.MAX_VALUE - 2 ? Integer.MAX_VALUE : lowWater + 2;
    }

    @Override
    public long index() {
        return index;
    }

    @Override
    public long requestId() {
        return owner.requestId();
    }

    @Override
    public boolean isLive() {
        return owner.isRunning();
    }

    @Override
    public int lane() {
        return owner.laneOf(this);
    }

    @Override
    public void taskFailed(TaskNode task, Throwable cause) {
        owner.taskFailed(task, cause);
    }

    public StepOwner owner() {
        return owner;
    }

    /**
     * Host: {@code n} more tasks belong to this step. Called once per publication batch, before
     * the batch is published and while the build guard is held, so the count cannot reach zero
     * early and costs one atomic update per batch instead of one per task.
     */
    public void addTasks(int n) {
        REMAINING.getAndAdd(this, n);
    }

    /** A task of this step has finished (ran, failed or was skipped). Any thread. */
    public void taskDone() {
        tasksDone(1);
    }

    /**
     * {@code n} tasks of this step have finished. Any thread. The decrement that reaches zero
     * reports the step done; the one that takes the count from at least {@code roomAt} to
     * below it reports room. Each value is passed by exactly one decrement, so both happen
     * once per crossing, whatever the batch sizes.
     */
    @Override
    public void tasksDone(int n) {
        int before = (int) REMAINING.getAndAdd(this, -n);
        if (before == n) {
            done = true;
            owner.stepDone(this);
        } else if (before >= roomAt && before - n < roomAt) {
            owner.roomInStep(this);
        }
    }

    /** Published tasks of this step not yet finished (while it is being built). */
    public int inFlight() {
        return remaining - 1;
    }

    /** Host: the step is fully built; drops the build guard. */
    public void close(Region tokenRegion) {
        this.tokenRegion = tokenRegion;
        taskDone();
    }

    /** Whether every task of the step is done. */
    public boolean isDone() {
        return done;
    }

    public boolean hasToken() {
        return tokenRegion != null;
    }

    public Region tokenRegion() {
        return tokenRegion;
    }

    /** Called by the device running the step's readback task, before that task completes. */
    @Override
    public void tokenRead(byte[] bytes) {
        this.token = bytes;
    }

    /** The token bytes; valid after the step is done. */
    public byte[] token() {
        return token;
    }

    @Override
    public String toString() {
        return "step " + index + " of request " + owner.requestId();
    }

    private static final VarHandle REMAINING;

    static {
        try {
            REMAINING = MethodHandles.lookup().findVarHandle(Step.class, "remaining", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }
}
