package dev.tandem.session;

import dev.tandem.KernelFailedException;
import dev.tandem.Outcome;
import dev.tandem.Program;
import dev.tandem.RequestTerminatedException;
import dev.tandem.SchedulingPolicy;
import dev.tandem.Status;
import dev.tandem.Token;
import dev.tandem.TokenStream;
import dev.tandem.TraceEvent;
import dev.tandem.graph.Step;
import dev.tandem.graph.StepOwner;
import dev.tandem.device.TaskNode;
import dev.tandem.trace.TraceRecorder;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Consumer;

/**
 * One request: its program thread, the in-order hand-over of its steps, its run-ahead gate
 * and its termination.
 *
 * <p>Implementation Overview.
 *
 * <p><b>Life cycle.</b> QUEUED (created, stream handed out) → STARTED ({@link #start}: its
 * program runs on its own virtual thread) → ENDED (terminated: the stream has its end) →
 * FINISHED (every task done, memory freed, {@link #completion()} complete, the owner told).
 * {@code started} is claimed once by CAS, either by {@link #start} (which then runs the
 * program) or by a termination that comes first (which then never runs it): a request ended
 * while queued finishes at once and never starts.
 *
 * <p><b>Termination.</b> {@code termination} goes from null to a terminal {@link Ending}
 * exactly once, by CAS ({@link #terminate}); the winner ends the stream at once and wakes the
 * program. From then on unstarted tasks are skipped by the cores (they still finish, so all
 * counters drain), the orchestrator throws {@link RequestTerminatedException} and no token
 * is delivered. {@code liveSteps} counts created steps not yet handed over plus one guard
 * held by the program until it has returned and closed its last step (or by the queue, for a
 * request that never starts); whoever brings it to zero runs {@link #finish} — inline if it is
 * one of the worker's virtual threads (the program's or a delivery thread), else on a fresh
 * one (a caller cancelling a queued request, a core, the deadline timer), so teardown and the
 * completion dependents it runs never execute on a core or inside a caller's
 * {@code cancel()}: decide COMPLETED if nothing ended the request before, free the request's
 * memory, give back its slot, complete {@link #completion()} (its dependents run here, on a
 * worker thread, so a {@code close()} they make does not wait on itself) and tell the owner. So a stream completes only after every task of the request is done
 * (no trailing task can fail unnoticed), and memory is freed only when no task can touch it.
 *
 * <p><b>Delivery.</b> Steps finish on any core in any order; a {@link DeliverySequencer}
 * hands them over in step order, one thread at a time, so only that thread writes
 * {@code delivered}. A drain started by a core runs on a fresh virtual thread of the request
 * when the request has a {@code stopWhen} predicate, else inline (it then runs no user code);
 * teardown always leaves the core ({@link #retireStep}), and stream subscribers have threads
 * of their own — so no user code and no teardown ever runs on a core. Handing over a step
 * delivers its token (if the request still runs), evaluates {@code stopWhen}, wakes the
 * program and retires the step. At most {@code runAhead} steps are built and
 * unfinished, plus the one being built (or closed by an abandoning program), so
 * {@code runAhead + 2} slots suffice.
 *
 * <p><b>Run-ahead gate.</b> The program parks in {@code endStep} while
 * {@code built − handedOver ≥ runAhead} (the device is behind) or
 * {@code built − taken ≥ streamBuffer} (the caller is behind: each built step may still
 * deliver a token, so {@code delivered − taken} never exceeds {@code streamBuffer}, even for
 * steps that were in flight when the gate was passed). It sets {@code hostParked}
 * and re-checks before parking; wakers update their counter, then read {@code hostParked}
 * and unpark. All are volatile, so one side always sees the other: no lost wake-up, and no
 * wait relies on a timeout. Termination wakes (and interrupts) the program too.
 */
final class RequestRun implements StepOwner, SchedulingPolicy.RequestView, StreamOwner {

    /** How the request ended. */
    record Ending(Status status, Throwable cause) {}

    private final long id;
    private final Program<Object> program;
    private final Object input;
    private final RequestSpec spec;
    private final DeviceParts device;
    private final Consumer<RequestRun> onReleased;
    private final Consumer<RequestRun> onFinished;
    private final TokenStreamImpl stream;
    private final CompletableFuture<Outcome> completion = new CompletableFuture<>();
    private final OrchestratorImpl orchestrator;
    private final long deadlineNanos;

    private final long submittedAt;
    private volatile long startedAt;
    private volatile long firstTokenAt;

    private final AtomicBoolean started = new AtomicBoolean();
    private volatile Ending termination;
    private volatile boolean finished;
    private final AtomicInteger liveSteps = new AtomicInteger(1);
    private volatile ScheduledFuture<?> deadlineTimer;

    // Delivery: steps in order, then tokens to the stream.
    private final DeliverySequencer sequencer;
    private volatile long delivered;

    // Run-ahead gate.
    private final AtomicLong taken = new AtomicLong();
    private volatile Thread programThread;
    private volatile boolean hostParked;

    @SuppressWarnings("unchecked")
    public RequestRun(
            long id, Program<?> program, Object input, RequestSpec spec, DeviceParts device,
            Consumer<RequestRun> onReleased, Consumer<RequestRun> onFinished) {
        this.id = id;
        this.program = (Program<Object>) program;
        this.input = input;
        this.spec = spec;
        this.device = device;
        this.onReleased = onReleased;
        this.onFinished = onFinished;
        this.submittedAt = System.nanoTime();
        this.deadlineNanos = spec.deadline() == null ? Long.MAX_VALUE : submittedAt + spec.deadline().toNanos();
        this.stream = new TokenStreamImpl(this);
        this.sequencer = new DeliverySequencer(spec.run().runAhead() + 2, this::handOver, this::drainOffCore);
        this.orchestrator = new OrchestratorImpl(this, device, spec.run(), spec.memoryQuota());
    }

    /**
     * Arms the request's deadline, if it has one, on {@code timer}. Call once, right after
     * construction; a deadline that has passed already ends the request at once.
     */
    public void armDeadline(ScheduledExecutorService timer) {
        if (deadlineNanos == Long.MAX_VALUE) {
            return;
        }
        long delay = deadlineNanos - System.nanoTime();
        deadlineTimer = timer.schedule(() -> terminate(Status.DEADLINE_EXCEEDED, null), delay, TimeUnit.NANOSECONDS);
        if (finished) {
            deadlineTimer.cancel(false);
        }
    }

    /**
     * Starts the program on its own virtual thread, unless the request has ended already.
     *
     * @return whether the program was started
     */
    public boolean start() {
        if (!started.compareAndSet(false, true)) {
            return false;
        }
        device.threads().start(threadName(""), this::runProgram);
        return true;
    }

    /** The name (after the worker's prefix) of one of this request's threads. */
    @Override
    public String threadName(String role) {
        return "request-" + id + role;
    }

    /** The worker's registry of the virtual threads it runs user code on. */
    @Override
    public RuntimeThreads threads() {
        return device.threads();
    }

    /**
     * Runs a delivery drain: on a fresh virtual thread when a core started it and the request
     * has a {@code stopWhen} predicate (user code), else inline. Without a predicate a hand-over
     * runs no user code — it appends to the stream, wakes the program, retires the step — and
     * its one heavy part, teardown, moves off the core by itself ({@link #retireStep}); so the
     * common case costs no thread hop per token.
     */
    private void drainOffCore(Runnable drain) {
        if (spec.stopWhen() != null && device.device().isDeviceThread()) {
            device.threads().start(threadName("-delivery"), drain);
        } else {
            drain.run();
        }
    }

    public TokenStream stream() {
        return stream;
    }

    @Override
    public long requestId() {
        return id;
    }

    @Override
    public long id() {
        return id;
    }

    /** The caller's id, or null. */
    public String name() {
        return spec.name();
    }


    /** Whether the calling thread is this request's program thread. */
    public boolean isProgramThread() {
        return programThread == Thread.currentThread();
    }

    @Override
    public boolean isRunning() {
        return termination == null;
    }


    @Override
    public boolean awaitingFirstToken() {
        return firstTokenAt == 0;
    }

    @Override
    public long deadlineNanos() {
        return deadlineNanos;
    }

    @Override
    public int priority() {
        return spec.priority();
    }

    /**
     * The policy's lane for a task of {@code step}. Runs on a core: a policy that throws or
     * returns a lane outside {@code [0, LANES)} fails this request (once) and the task goes to
     * the normal lane, so its successors are still released and the core lives on.
     */
    @Override
    public int laneOf(Step step) {
        int lane;
        try {
            lane = spec.policy().lane(this, step.index());
        } catch (RuntimeException | Error failure) {
            terminate(Status.FAILED, new IllegalStateException(
                    "request " + id + ": scheduling policy " + spec.policy() + " threw", failure));
            return SchedulingPolicy.NORMAL_LANE;
        }
        if (lane < 0 || lane >= SchedulingPolicy.LANES) {
            terminate(Status.FAILED, new IllegalStateException("request " + id + ": scheduling policy "
                    + spec.policy() + " returned lane " + lane + ", outside [0, " + SchedulingPolicy.LANES + ")"));
            return SchedulingPolicy.NORMAL_LANE;
        }
        return lane;
    }

    /** The request's status if it has ended, else null. */
    public Status status() {
        Ending ending = termination;
        return ending == null ? null : ending.status();
    }

    /** Tokens handed to the stream so far. */
    public long tokensDelivered() {
        return delivered;
    }

    @Override
    public CompletableFuture<Outcome> completion() {
        return completion.copy();
    }


    // ---- program thread ------------------------------------------------------------------

    private void runProgram() {
        programThread = Thread.currentThread();
        startedAt = System.nanoTime();
        TraceRecorder trace = device.trace();
        if (trace != null) {
            trace.recordShared(TraceEvent.Kind.REQUEST_STARTED, submittedAt, startedAt, TraceEvent.HOST, id, -1, -1, null, 0);
        }
        try {
            if (isRunning()) {
                program.run(orchestrator, input);
                orchestrator.programReturned();
            } else {
                orchestrator.abandon();
            }
        } catch (RequestTerminatedException ended) {
            orchestrator.abandon();
        } catch (Throwable failure) {
            terminate(Status.FAILED, failure);
            orchestrator.abandon();
        } finally {
            Thread.interrupted(); // a termination may have interrupted us; the thread ends here
            retireStep();
        }
    }

    /** Throws if the request has ended; called by the orchestrator on every call. */
    void checkRunning() {
        Ending ending = termination;
        if (ending != null) {
            throw new RequestTerminatedException(id, ending.status());
        }
    }

    /** A step was created by the orchestrator. */
    void stepCreated() {
        liveSteps.incrementAndGet();
    }

    /** Parks the program while it is far enough ahead of the device or of its caller. */
    void awaitGate(long built) {
        while (true) {
            checkRunning();
            if (gateOpen(built)) {
                return;
            }
            hostParked = true;
            if (!isRunning() || gateOpen(built)) {
                hostParked = false;
                continue;
            }
            LockSupport.park(this);
            hostParked = false;
        }
    }

    /**
     * Parks the program while {@code step}, being built, has more than {@code lowWater} tasks
     * in flight. Same handshake as the run-ahead gate: {@code hostParked}, re-check, park; the
     * core whose finish brings them to {@code lowWater} wakes it ({@link #roomInStep}), and so
     * does termination.
     */
    void awaitRoom(Step step, int lowWater) {
        while (true) {
            checkRunning();
            if (step.inFlight() <= lowWater) {
                return;
            }
            hostParked = true;
            if (!isRunning() || step.inFlight() <= lowWater) {
                hostParked = false;
                continue;
            }
            LockSupport.park(this);
            hostParked = false;
        }
    }

    @Override
    public void roomInStep(Step step) {
        wakeHost();
    }

    private boolean gateOpen(long built) {
        // Every built step delivers at most one token, so counting built (not delivered) steps
        // keeps delivered − taken ≤ streamBuffer at all times, however far delivery lags.
        return built - sequencer.next() < spec.run().runAhead()
                && built - taken.get() < spec.run().streamBuffer();
    }

    private void wakeHost() {
        if (hostParked) {
            LockSupport.unpark(programThread);
        }
    }

    // ---- cores -----------------------------------------------------------------------------

    @Override
    public void taskFailed(TaskNode task, Throwable cause) {
        terminate(Status.FAILED, new KernelFailedException(
                "request " + id + ", step " + task.group().index() + ", task " + task.index() + " (kernel "
                        + task.name() + "): " + cause,
                cause));
    }

    @Override
    public void stepDone(Step step) {
        TraceRecorder trace = device.trace();
        if (trace != null) {
            long now = System.nanoTime();
            trace.recordShared(TraceEvent.Kind.STEP_DONE, now, now, TraceEvent.OTHER, id, step.index(), -1, null, 0);
        }
        sequencer.finished(step);
    }

    /** Called by the sequencer, in step order, one thread at a time. */
    private void handOver(Step step) {
        try {
            deliver(step);
        } catch (RuntimeException | Error failure) {
            // The sequencer's consumer must not throw (it would stop every later hand-over):
            // a failure here is the request's.
            terminate(Status.FAILED, failure);
        }
        wakeHost();
        retireStep();
    }

    private void deliver(Step step) {
        if (!step.hasToken() || !isRunning()) {
            return;
        }
        long now = System.nanoTime();
        Token token = new Token(id, step.index(), step.token());
        long count = stream.offer(token);
        if (count < 0) {
            return; // ended meanwhile: the token is not part of the stream
        }
        delivered = count;
        if (firstTokenAt == 0) {
            firstTokenAt = now;
        }
        TraceRecorder trace = device.trace();
        if (trace != null) {
            trace.recordShared(TraceEvent.Kind.TOKEN_DELIVERED, now, now, TraceEvent.OTHER, id, step.index(), -1, null, count);
        }
        boolean stop;
        try {
            stop = count >= spec.run().maxTokens() || (spec.stopWhen() != null && spec.stopWhen().test(token));
        } catch (RuntimeException | Error failure) {
            terminate(Status.FAILED, new IllegalStateException(
                    "request " + id + ": the stopWhen predicate threw on the token of step " + step.index(), failure));
            return;
        }
        if (stop) {
            terminate(Status.COMPLETED, null);
        }
    }

    // ---- callers ---------------------------------------------------------------------------

    /** The caller took the token of {@code step} from the stream. */
    @Override
    public void tokenTaken(long step) {
        long count = taken.incrementAndGet();
        TraceRecorder trace = device.trace();
        if (trace != null) {
            long now = System.nanoTime();
            trace.recordShared(TraceEvent.Kind.TOKEN_TAKEN, now, now, TraceEvent.OTHER, id, step, -1, null, count);
        }
        wakeHost();
    }

    /**
     * Ends the request with {@code status} unless it has ended already. Any thread, any time.
     *
     * @return whether this call ended it
     */
    @Override
    public boolean terminate(Status status, Throwable cause) {
        Ending ending = new Ending(status, cause);
        if (!TERMINATION.compareAndSet(this, null, ending)) {
            return false;
        }
        stream.end(status, tokens -> outcome(ending, System.nanoTime(), tokens));
        if (started.compareAndSet(false, true)) {
            retireStep(); // never started: the queue's guard goes, and it finishes now
            return true;
        }
        Thread program = programThread;
        if (program != null) {
            if (status != Status.COMPLETED) {
                program.interrupt(); // a program blocked outside the runtime learns of it too
            }
            LockSupport.unpark(program);
        }
        return true;
    }

    // ---- end -------------------------------------------------------------------------------

    private void retireStep() {
        if (liveSteps.decrementAndGet() == 0) {
            if (device.threads().isRuntimeThread()) {
                finish();
            } else {
                device.threads().start(threadName("-end"), this::finish);
            }
        }
    }

    /**
     * Runs once, when the program has returned (or never started) and every step is done, on a
     * virtual thread of the worker (never a core, never a caller's thread).
     */
    private void finish() {
        terminate(Status.COMPLETED, null);
        Thread.interrupted(); // on the program thread, a late cancel may have interrupted it
        finished = true;
        ScheduledFuture<?> timer = deadlineTimer;
        if (timer != null) {
            timer.cancel(false);
        }
        long endedAt = System.nanoTime();
        orchestrator.freeMemory();
        Outcome outcome = outcome(termination, endedAt, stream.tokensAtEnd());
        TraceRecorder trace = device.trace();
        if (trace != null) {
            trace.recordShared(TraceEvent.Kind.REQUEST, submittedAt, endedAt, TraceEvent.OTHER, id, -1, -1, null,
                    outcome.status().ordinal());
        }
        onReleased.accept(this); // what the owner reserved is back before the caller sees the end
        completion.complete(outcome); // user dependents run here: on a worker thread, off the cores
        onFinished.accept(this); // and only then may the owner report itself drained
    }

    /** @param tokens the tokens the stream counts as received: {@link TokenStreamImpl#tokensAtEnd} */
    private Outcome outcome(Ending ending, long now, long tokens) {
        long start = startedAt;
        long first = firstTokenAt;
        return new Outcome(
                id,
                ending.status(),
                ending.cause(),
                tokens,
                Duration.ofNanos(start == 0 ? now - submittedAt : start - submittedAt),
                first == 0 ? null : Duration.ofNanos(first - submittedAt),
                Duration.ofNanos(now - submittedAt));
    }

    @Override
    public String toString() {
        return "request " + id + (spec.name() == null ? "" : " (" + spec.name() + ")");
    }

    private static final VarHandle TERMINATION;

    static {
        try {
            TERMINATION = MethodHandles.lookup().findVarHandle(RequestRun.class, "termination", Ending.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }
}
