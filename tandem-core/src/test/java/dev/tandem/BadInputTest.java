package dev.tandem;

import static dev.tandem.Access.read;
import static dev.tandem.Access.readWrite;
import static dev.tandem.Access.write;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Bad input fails its own request, never the process and never another request: each case
 * runs beside a bystander request that must complete with exactly its tokens, and checks that
 * the failure names the request, step, task index, kernel and region; that the outcome is
 * FAILED with that cause; that iterating the stream throws {@link StreamTerminatedException};
 * that the worker's memory returns to what it was; and that the worker then runs a new
 * request normally.
 *
 * <p>Every bad program first builds step 0 (task 0 increments a counter, task 1 reads it
 * back) and task 2 of step 1, so the bad task is task 3 of step 1 unless a case says
 * otherwise.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class BadInputTest {

    static final Kernel INCREMENT = Kernel.of("increment", c -> {
        MemorySegment seg = c.region(0);
        seg.set(ValueLayout.JAVA_INT, 0, seg.get(ValueLayout.JAVA_INT, 0) + 1);
    });

    static final Kernel PROBE = Kernel.of("probe", c -> {});

    private static final int BYSTANDER_TOKENS = 21;
    private static final Duration WAIT = Duration.ofSeconds(30);

    private Worker worker;

    @BeforeEach
    void openWorker() {
        worker = Worker.create(CpuDeviceConfig.withCores(2));
    }

    @AfterEach
    void closeWorker() {
        worker.close();
    }

    // ---- the harness -----------------------------------------------------------------------

    /** What a bad program observed about the task it got wrong. */
    static final class Culprit {
        volatile long requestId = -1;
        volatile String region;
    }

    /** Step 0 and the first task of step 1: the next task the program submits is task 3 of step 1. */
    static Buffer prelude(Orchestrator o) {
        Buffer counter = o.allocate(ValueLayout.JAVA_INT, 1);
        o.submit(INCREMENT, readWrite(counter));
        o.endStep(counter.region());
        o.submit(INCREMENT, readWrite(counter));
        return counter;
    }

    /** One token, then waits for {@code release}, then 20 more: tokens 1..21. */
    static final Program<CompletableFuture<Void>> BYSTANDER = (o, release) -> {
        Buffer counter = o.allocate(ValueLayout.JAVA_INT, 1);
        o.submit(INCREMENT, readWrite(counter));
        o.endStep(counter.region());
        release.join();
        for (int i = 1; i < BYSTANDER_TOKENS; i++) {
            o.submit(INCREMENT, readWrite(counter));
            o.endStep(counter.region());
        }
    };

    /**
     * Runs {@code bad} while a bystander request is in flight, and checks everything a bad
     * request must leave behind except the cause, which it returns for the caller to check.
     */
    private Outcome runBesideBystander(Program<Void> bad) throws Exception {
        return runBesideBystander(bad, worker.memoryInUse(), () -> {});
    }

    /**
     * As {@link #runBesideBystander(Program)}, for cases with more requests of their own:
     * {@code onBadEnded} runs once the bad request has ended (or the check failed), and the
     * memory is compared with {@code memoryBefore} once {@code others} have completed too.
     */
    private Outcome runBesideBystander(Program<Void> bad, long memoryBefore, Runnable onBadEnded,
            TokenStream... others) throws Exception {
        CompletableFuture<Void> release = new CompletableFuture<>();
        TokenStream bystander = worker.run(BYSTANDER, release, RunOptions.defaults());
        Outcome outcome;
        TokenStream stream;
        try {
            Token first = bystander.poll(WAIT);
            assertThat(first).as("the bystander's first token").isNotNull();
            assertThat(first.asInt()).isEqualTo(1);
            stream = worker.run(bad, null, RunOptions.defaults());
            outcome = stream.completion().get(WAIT.toSeconds(), TimeUnit.SECONDS);
        } finally {
            release.complete(null);
            onBadEnded.run();
        }
        assertThat(outcome.status()).as("status of the bad request: %s", outcome).isEqualTo(Status.FAILED);
        assertThat(outcome.cause()).as("cause of %s", outcome).isNotNull();
        assertThatThrownBy(() -> {
                    for (Token ignored : stream) {
                        // drain
                    }
                })
                .as("iterating the stream of a failed request")
                .isInstanceOfSatisfying(StreamTerminatedException.class, e -> {
                    assertThat(e.status()).isEqualTo(Status.FAILED);
                    assertThat(e.getCause()).as("the stream's exception carries the outcome's cause")
                            .isSameAs(outcome.cause());
                });
        assertThatThrownBy(() -> stream.iterator().hasNext())
                .as("a second read after the end sees the end again")
                .isInstanceOf(StreamTerminatedException.class);

        List<Integer> values = new ArrayList<>(List.of(1));
        for (Token token : bystander) {
            values.add(token.asInt());
        }
        assertThat(values).as("tokens of the bystander request that ran beside the bad one")
                .isEqualTo(counting(BYSTANDER_TOKENS));
        assertThat(bystander.completion().get(WAIT.toSeconds(), TimeUnit.SECONDS).status())
                .isEqualTo(Status.COMPLETED);
        for (TokenStream other : others) {
            other.completion().get(WAIT.toSeconds(), TimeUnit.SECONDS);
        }
        assertThat(worker.memoryInUse())
                .as("device memory in use once the bad request and the bystander have completed")
                .isEqualTo(memoryBefore);
        assertWorkerStillRunsRequests();
        return outcome;
    }

    private void assertWorkerStillRunsRequests() throws Exception {
        TokenStream stream = worker.run((o, in) -> {
            Buffer counter = o.allocate(ValueLayout.JAVA_INT, 1);
            for (int i = 0; i < 3; i++) {
                o.submit(INCREMENT, readWrite(counter));
                o.endStep(counter.region());
            }
        }, null);
        List<Integer> values = new ArrayList<>();
        for (Token token : stream) {
            values.add(token.asInt());
        }
        assertThat(values).as("tokens of a new request after the failure").containsExactly(1, 2, 3);
        assertThat(stream.completion().get(WAIT.toSeconds(), TimeUnit.SECONDS).status()).isEqualTo(Status.COMPLETED);
    }

    static List<Integer> counting(int n) {
        List<Integer> values = new ArrayList<>();
        for (int i = 1; i <= n; i++) {
            values.add(i);
        }
        return values;
    }

    /** Checks that an invalid-task failure names everything a user needs to find the task. */
    static void assertNamesTheTask(Throwable cause, long requestId, long step, long task, String kernel,
            String region) {
        assertThat(cause).as("cause").isInstanceOf(InvalidTaskException.class);
        assertThat(cause.getMessage())
                .as("message of %s", cause)
                .contains("request " + requestId)
                .contains("step " + step)
                .contains("task " + task)
                .contains("kernel " + kernel);
        if (region != null) {
            assertThat(cause.getMessage()).as("message of %s names the region", cause).contains(region);
        }
    }

    // ---- regions out of bounds -------------------------------------------------------------

    @ParameterizedTest(name = "region({0}, {1}) of an 8-byte buffer")
    @CsvSource({
        "4, 8", // offset + length > size
        "0, 9",
        "8, 1", // starts at the end
        "-1, 4", // negative offset
        "0, -1", // negative length
        "2, -2",
        "9223372036854775807, 1", // offset + length overflows
        "1, 9223372036854775807",
        "-9223372036854775808, 0"
    })
    void regionOutOfItsBufferFailsTheRequestAndNamesTheTask(long offset, long length) throws Exception {
        Culprit culprit = new Culprit();
        Outcome outcome = runBesideBystander((o, in) -> {
            culprit.requestId = o.requestId();
            Buffer counter = prelude(o);
            Region bad = counter.region(offset, length);
            culprit.region = bad.toString();
            o.submit(PROBE, write(bad));
            o.endStep(counter.region());
        });
        assertNamesTheTask(outcome.cause(), culprit.requestId, 1, 3, "probe", culprit.region);
    }

    @Test
    void tokenRegionOutOfItsBufferFailsTheRequestAndNamesTheReadback() throws Exception {
        Culprit culprit = new Culprit();
        Outcome outcome = runBesideBystander((o, in) -> {
            culprit.requestId = o.requestId();
            Buffer counter = prelude(o);
            Region bad = counter.region(2, 4);
            culprit.region = bad.toString();
            o.endStep(bad);
        });
        assertNamesTheTask(outcome.cause(), culprit.requestId, 1, 3, "tandem.readback", culprit.region);
    }

    // ---- worker buffers --------------------------------------------------------------------

    @ParameterizedTest
    @EnumSource(value = AccessMode.class, names = {"WRITE", "READ_WRITE"})
    void writingAFrozenWorkerBufferFailsTheRequest(AccessMode mode) throws Exception {
        Buffer weights = worker.allocate(16);
        MemorySegment host = weights.hostSegment();
        host.fill((byte) 7);
        weights.freeze();
        Culprit culprit = new Culprit();
        Outcome outcome = runBesideBystander((o, in) -> {
            culprit.requestId = o.requestId();
            Buffer counter = prelude(o);
            Region bad = weights.region(4, 8);
            culprit.region = bad.toString();
            o.submit(Kernel.of("scribble", c -> c.region(0).fill((byte) 1)), new Access(bad, mode));
            o.endStep(counter.region());
        });
        assertNamesTheTask(outcome.cause(), culprit.requestId, 1, 3, "scribble", culprit.region);
        assertThat(outcome.cause().getMessage()).contains("frozen");
        assertThat(host.toArray(ValueLayout.JAVA_BYTE)).as("the frozen worker buffer's bytes")
                .containsOnly((byte) 7);
    }

    @Test
    void readingAWorkerBufferThatIsNotFrozenFailsTheRequest() throws Exception {
        Buffer weights = worker.allocate(16);
        Culprit culprit = new Culprit();
        Outcome outcome = runBesideBystander((o, in) -> {
            culprit.requestId = o.requestId();
            Buffer counter = prelude(o);
            Region bad = weights.region();
            culprit.region = bad.toString();
            o.submit(PROBE, read(bad));
            o.endStep(counter.region());
        });
        assertNamesTheTask(outcome.cause(), culprit.requestId, 1, 3, "probe", culprit.region);
        assertThat(outcome.cause().getMessage()).contains("not frozen");
    }

    // ---- buffers of other scopes -----------------------------------------------------------

    @Test
    void aBufferOfAnotherRequestFailsTheThiefAndLeavesTheOwnerIntact() throws Exception {
        CompletableFuture<Buffer> smuggled = new CompletableFuture<>();
        CompletableFuture<Void> thiefDone = new CompletableFuture<>();
        long memoryBefore = worker.memoryInUse();
        TokenStream owner = worker.run((o, in) -> {
            Buffer counter = o.allocate(ValueLayout.JAVA_INT, 1);
            o.submit(INCREMENT, readWrite(counter));
            o.endStep(counter.region());
            smuggled.complete(counter);
            thiefDone.join();
            o.submit(INCREMENT, readWrite(counter));
            o.endStep(counter.region());
        }, null);
        Culprit culprit = new Culprit();
        Outcome outcome;
        try {
            outcome = runBesideBystander((o, in) -> {
                culprit.requestId = o.requestId();
                Buffer counter = prelude(o);
                Buffer stolen = smuggled.join();
                culprit.region = stolen.region().toString();
                o.submit(Kernel.of("scribble", c -> c.region(0).fill((byte) 0x55)), write(stolen));
                o.endStep(counter.region());
            }, memoryBefore, () -> thiefDone.complete(null), owner);
        } finally {
            thiefDone.complete(null);
        }
        assertNamesTheTask(outcome.cause(), culprit.requestId, 1, 3, "scribble", culprit.region);
        assertThat(outcome.cause().getMessage()).contains("not of this request");
        List<Integer> values = new ArrayList<>();
        for (Token token : owner) {
            values.add(token.asInt());
        }
        assertThat(values).as("tokens of the request whose buffer was smuggled out").containsExactly(1, 2);
    }

    @Test
    void aBufferOfAFinishedRequestIsFreedAndFailsTheRequestThatKeptIt() throws Exception {
        AtomicReference<Buffer> kept = new AtomicReference<>();
        TokenStream first = worker.run((o, in) -> {
            Buffer counter = o.allocate(ValueLayout.JAVA_INT, 1);
            kept.set(counter);
            o.submit(INCREMENT, readWrite(counter));
            o.endStep(counter.region());
        }, null);
        assertThat(first.completion().get(WAIT.toSeconds(), TimeUnit.SECONDS).status()).isEqualTo(Status.COMPLETED);
        Culprit culprit = new Culprit();
        Outcome outcome = runBesideBystander((o, in) -> {
            culprit.requestId = o.requestId();
            Buffer counter = prelude(o);
            Region bad = kept.get().region();
            culprit.region = bad.toString();
            o.submit(INCREMENT, readWrite(bad));
            o.endStep(counter.region());
        });
        assertNamesTheTask(outcome.cause(), culprit.requestId, 1, 3, "increment", culprit.region);
        assertThat(outcome.cause().getMessage()).contains("freed");
    }

    @Test
    void aStepScopedBufferUsedByALaterStepFailsTheRequest() throws Exception {
        Culprit culprit = new Culprit();
        Outcome outcome = runBesideBystander((o, in) -> {
            culprit.requestId = o.requestId();
            Buffer counter = o.allocate(ValueLayout.JAVA_INT, 1);
            Buffer scratch = o.allocateStep(8);
            o.submit(PROBE, write(scratch)); // task 0
            o.submit(INCREMENT, readWrite(counter)); // task 1
            o.endStep(counter.region()); // task 2
            Region bad = scratch.region();
            culprit.region = bad.toString();
            o.submit(PROBE, read(bad)); // task 3, step 1
            o.endStep(counter.region());
        });
        assertNamesTheTask(outcome.cause(), culprit.requestId, 1, 3, "probe", culprit.region);
        assertThat(outcome.cause().getMessage()).contains("step-scoped");
    }

    @Test
    void aStepScopedBufferAsALaterStepsTokenFailsTheRequest() throws Exception {
        Culprit culprit = new Culprit();
        Outcome outcome = runBesideBystander((o, in) -> {
            culprit.requestId = o.requestId();
            Buffer scratch = o.allocateStep(4);
            o.submit(INCREMENT, write(scratch)); // task 0
            o.endStep(scratch.region()); // task 1: its own step, fine
            Region bad = scratch.region();
            culprit.region = bad.toString();
            o.endStep(bad); // task 2, step 1
        });
        assertNamesTheTask(outcome.cause(), culprit.requestId, 1, 2, "tandem.readback", culprit.region);
    }

    @Test
    void aRegionOfABufferFromElsewhereFailsTheRequest() throws Exception {
        Buffer foreign = new Buffer() {
            @Override
            public String name() {
                return "foreign";
            }

            @Override
            public long byteSize() {
                return 8;
            }

            @Override
            public Scope scope() {
                return Scope.REQUEST;
            }

            @Override
            public MemorySegment hostSegment() {
                throw new IllegalStateException();
            }

            @Override
            public Buffer freeze() {
                throw new IllegalStateException();
            }

            @Override
            public boolean isFrozen() {
                return false;
            }
        };
        Culprit culprit = new Culprit();
        Outcome outcome = runBesideBystander((o, in) -> {
            culprit.requestId = o.requestId();
            Buffer counter = prelude(o);
            culprit.region = foreign.region().toString();
            o.submit(PROBE, read(foreign));
            o.endStep(counter.region());
        });
        assertNamesTheTask(outcome.cause(), culprit.requestId, 1, 3, "probe", culprit.region);
    }

    // ---- null arguments --------------------------------------------------------------------

    enum NullArgument {
        KERNEL("null", "kernel is null") {
            @Override
            void submit(Orchestrator o, Buffer b) {
                o.submit(null, read(b));
            }
        },
        ACCESS("probe", "access 1 is null") {
            @Override
            void submit(Orchestrator o, Buffer b) {
                o.submit(PROBE, read(b), null);
            }
        },
        ACCESSES("probe", "accesses is null") {
            @Override
            void submit(Orchestrator o, Buffer b) {
                o.submit(PROBE, Orchestrator.NO_SCALARS, (Access[]) null);
            }
        },
        SCALARS("probe", "scalars is null") {
            @Override
            void submit(Orchestrator o, Buffer b) {
                o.submit(PROBE, (long[]) null, read(b));
            }
        },
        TOKEN_REGION("tandem.readback", "token region is null") {
            @Override
            void submit(Orchestrator o, Buffer b) {
                o.endStep(null);
            }
        };

        final String kernel;
        final String message;

        NullArgument(String kernel, String message) {
            this.kernel = kernel;
            this.message = message;
        }

        abstract void submit(Orchestrator o, Buffer b);
    }

    @ParameterizedTest
    @EnumSource(NullArgument.class)
    void aNullArgumentFailsTheRequestAndNamesTheTask(NullArgument argument) throws Exception {
        Culprit culprit = new Culprit();
        Outcome outcome = runBesideBystander((o, in) -> {
            culprit.requestId = o.requestId();
            Buffer counter = prelude(o);
            argument.submit(o, counter);
            o.endStep(counter.region());
        });
        assertNamesTheTask(outcome.cause(), culprit.requestId, 1, 3, argument.kernel, null);
        assertThat(outcome.cause().getMessage()).contains(argument.message);
    }

    // ---- kernels that fail -----------------------------------------------------------------

    @Test
    void aKernelThatThrowsFailsItsRequestWithTheOriginalExceptionAsCause() throws Exception {
        AtomicReference<Exception> thrown = new AtomicReference<>();
        Culprit culprit = new Culprit();
        Outcome outcome = runBesideBystander((o, in) -> {
            culprit.requestId = o.requestId();
            Buffer counter = o.allocate(ValueLayout.JAVA_INT, 1);
            o.submit(INCREMENT, readWrite(counter)); // task 0
            o.endStep(counter.region()); // task 1
            o.submit(Kernel.of("explode", c -> {
                IllegalStateException boom = new IllegalStateException("boom");
                thrown.set(boom);
                throw boom;
            }), readWrite(counter)); // task 2, step 1
            o.endStep(counter.region());
            o.submit(INCREMENT, readWrite(counter));
            o.endStep(counter.region());
        });
        assertThat(outcome.cause()).isInstanceOf(KernelFailedException.class);
        assertThat(outcome.cause().getMessage())
                .as("message of %s", outcome.cause())
                .contains("request " + culprit.requestId)
                .contains("step 1")
                .contains("task 2")
                .contains("kernel explode");
        assertThat(outcome.cause().getCause()).as("the kernel's own exception").isSameAs(thrown.get());
        assertThat(outcome.tokens()).as("tokens delivered before the failing step").isLessThanOrEqualTo(1);
    }

    @Test
    void aKernelWritingItsReadRegionFailsAndLeavesTheBufferUnchanged() throws Exception {
        Buffer weights = worker.allocate(16);
        MemorySegment host = weights.hostSegment();
        host.fill((byte) 7);
        weights.freeze();
        Culprit culprit = new Culprit();
        Outcome outcome = runBesideBystander((o, in) -> {
            culprit.requestId = o.requestId();
            Buffer counter = prelude(o);
            o.submit(Kernel.of("scribble", c -> c.region(1).set(ValueLayout.JAVA_BYTE, 3, (byte) 1)),
                    readWrite(counter), read(weights));
            o.endStep(counter.region());
        });
        assertThat(outcome.cause()).isInstanceOf(KernelFailedException.class);
        assertThat(outcome.cause().getMessage()).contains("step 1").contains("task 3").contains("kernel scribble");
        assertThat(outcome.cause().getCause())
                .as("writing a READ region must throw: READ regions are read-only segments")
                .isInstanceOfAny(UnsupportedOperationException.class, IllegalArgumentException.class)
                .hasMessageContaining("read-only");
        assertThat(host.toArray(ValueLayout.JAVA_BYTE)).as("bytes of the buffer the kernel tried to write")
                .containsOnly((byte) 7);
    }

    @Test
    void aReadRegionOfARequestBufferIsReadOnlyToItsKernel() throws Exception {
        AtomicReference<Throwable> refused = new AtomicReference<>();
        TokenStream stream = worker.run((o, in) -> {
            Buffer data = o.allocate(8);
            o.submit(Kernel.of("fill", c -> c.region(0).fill((byte) 3)), write(data));
            o.submit(Kernel.of("scribble", c -> {
                try {
                    c.region(0).fill((byte) 9); // IllegalArgumentException on a read-only segment
                } catch (IllegalArgumentException | UnsupportedOperationException e) {
                    refused.set(e);
                }
            }), read(data.region(2, 4)));
            o.endStep(data.region());
        }, null);
        List<byte[]> tokens = new ArrayList<>();
        for (Token token : stream) {
            tokens.add(token.bytes());
        }
        assertThat(refused.get()).as("the write to a READ region must have been refused").isNotNull();
        assertThat(tokens).hasSize(1);
        assertThat(tokens.getFirst()).as("bytes after a kernel tried to write its READ region")
                .containsOnly((byte) 3);
    }

    // ---- memory --------------------------------------------------------------------------

    @ParameterizedTest
    @EnumSource(value = Buffer.Scope.class, names = {"REQUEST", "STEP"})
    void anAllocationOverTheBudgetFailsOnlyItsRequest(Buffer.Scope scope) throws Exception {
        Culprit culprit = new Culprit();
        long tooMuch = worker.device().memoryBudget() + 1;
        Outcome outcome = runBesideBystander((o, in) -> {
            culprit.requestId = o.requestId();
            Buffer counter = prelude(o);
            Buffer huge = scope == Buffer.Scope.STEP ? o.allocateStep(tooMuch) : o.allocate(tooMuch);
            o.submit(PROBE, write(huge));
            o.endStep(counter.region());
        });
        assertThat(outcome.cause()).isInstanceOf(DeviceOutOfMemoryException.class);
        assertThat(outcome.cause().getMessage())
                .as("message of %s", outcome.cause())
                .contains("request " + culprit.requestId)
                .contains("step 1")
                .contains(String.valueOf(tooMuch));
    }

    // ---- the orchestrator outside its program thread ---------------------------------------

    @Test
    void callsAfterTheProgramReturnedThrowIllegalStateAndChangeNothing() throws Exception {
        AtomicReference<Orchestrator> leaked = new AtomicReference<>();
        AtomicReference<Buffer> buffer = new AtomicReference<>();
        TokenStream stream = worker.run((o, in) -> {
            leaked.set(o);
            Buffer counter = o.allocate(ValueLayout.JAVA_INT, 1);
            buffer.set(counter);
            o.submit(INCREMENT, readWrite(counter));
            o.endStep(counter.region());
        }, null);
        Outcome outcome = stream.completion().get(WAIT.toSeconds(), TimeUnit.SECONDS);
        assertThat(outcome.status()).isEqualTo(Status.COMPLETED);
        long memoryBefore = worker.memoryInUse();
        Orchestrator o = leaked.get();
        Buffer counter = buffer.get();
        assertThatThrownBy(() -> o.submit(INCREMENT, readWrite(counter)))
                .as("submit from another thread after the program returned")
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("request " + outcome.requestId())
                .hasMessageContaining("submit")
                .hasMessageContaining("returned");
        assertThatThrownBy(() -> o.endStep(counter.region())).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> o.allocate(8)).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> o.allocateStep(8)).isInstanceOf(IllegalStateException.class);
        assertThat(worker.memoryInUse()).as("memory after the rejected calls").isEqualTo(memoryBefore);
        assertThat(stream.completion().get().status()).isEqualTo(Status.COMPLETED);
        assertWorkerStillRunsRequests();
    }

    @Test
    void callsFromAnotherThreadWhileTheProgramRunsThrowAndLeaveTheRequestIntact() throws Exception {
        AtomicReference<Orchestrator> leaked = new AtomicReference<>();
        CompletableFuture<Buffer> firstStepBuilt = new CompletableFuture<>();
        CompletableFuture<Void> intruderDone = new CompletableFuture<>();
        TokenStream stream = worker.run((o, in) -> {
            leaked.set(o);
            Buffer counter = o.allocate(ValueLayout.JAVA_INT, 1);
            o.submit(INCREMENT, readWrite(counter));
            firstStepBuilt.complete(counter);
            intruderDone.join();
            o.endStep(counter.region());
            o.submit(INCREMENT, readWrite(counter));
            o.endStep(counter.region());
        }, null);
        try {
            Buffer counter = firstStepBuilt.get(WAIT.toSeconds(), TimeUnit.SECONDS);
            assertThatThrownBy(() -> leaked.get().submit(INCREMENT, readWrite(counter)))
                    .as("submit from a thread other than the program's")
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("program's thread");
            assertThatThrownBy(() -> leaked.get().endStep(counter.region())).isInstanceOf(IllegalStateException.class);
        } finally {
            intruderDone.complete(null);
        }
        List<Integer> values = new ArrayList<>();
        for (Token token : stream) {
            values.add(token.asInt());
        }
        assertThat(values).as("tokens of the request whose orchestrator another thread tried to use")
                .containsExactly(1, 2);
    }
}
