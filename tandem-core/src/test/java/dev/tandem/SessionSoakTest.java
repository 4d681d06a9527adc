package dev.tandem;

import static dev.tandem.Access.readWrite;
import static org.assertj.core.api.Assertions.assertThat;

import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Flow;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A randomized soak of one session: many requests with random arrival, fast, slow and absent
 * consumers, subscribers with random demand, cancels, deadlines, stop tokens and injected
 * kernel faults. Afterwards every stream ended exactly once with a status its plan allows,
 * every stream's tokens are a prefix of what the request alone produces (all of it when it
 * completed normally), device memory is back to zero and no request thread is left.
 *
 * <p>CI runs {@value #CI_REQUESTS} requests; {@code -Dtandem.long=true} runs 20 times more.
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class SessionSoakTest {
    static final int CI_REQUESTS = 3000;

    /** What one request will do and what will be done to it. */
    record Plan(int tokens, int faultAtStep, int stopAt, long deadlineMicros, Consumer consumer, int cancelAfterTokens) {}

    enum Consumer { FAST, SLOW, SUBSCRIBER, NEVER_READS }

    static final Kernel INCREMENT = Kernel.of("increment", c -> {
        var x = c.region(0);
        x.set(ValueLayout.JAVA_INT, 0, x.get(ValueLayout.JAVA_INT, 0) + 1);
    });

    static final Kernel FAULT = Kernel.of("fault", c -> {
        throw new IllegalStateException("injected fault at step " + c.step());
    });

    /** Counts 1..tokens; a fault task in step faultAtStep, after that step's increment. */
    static final Program<Plan> PROGRAM = (o, plan) -> {
        Buffer counter = o.allocate(ValueLayout.JAVA_INT, 1);
        Buffer scratch = o.allocate(8);
        for (int i = 0; i < plan.tokens(); i++) {
            o.submit(INCREMENT, readWrite(counter));
            if (i == plan.faultAtStep()) {
                o.submit(FAULT, readWrite(scratch));
            }
            o.endStep(counter.region());
        }
    };

    @Test
    void everyStreamEndsOnceWithAnAllowedStatusAndNothingLeaks() throws Exception {
        int requests = Boolean.getBoolean("tandem.long") ? CI_REQUESTS * 20 : CI_REQUESTS;
        SplittableRandom random = new SplittableRandom(20261130L);
        List<Plan> plans = new ArrayList<>();
        for (int i = 0; i < requests; i++) {
            int tokens = 1 + random.nextInt(24);
            int fault = random.nextInt(6) == 0 ? random.nextInt(tokens) : -1;
            int stop = random.nextInt(6) == 0 ? 1 + random.nextInt(tokens) : -1;
            long deadline = random.nextInt(8) == 0 ? 200 + random.nextInt(20_000) : -1;
            Consumer consumer = Consumer.values()[random.nextInt(8) == 0 ? 3 : random.nextInt(3)];
            int cancel = random.nextInt(8) == 0 ? random.nextInt(tokens + 1) : -1;
            if (consumer == Consumer.NEVER_READS && deadline < 0 && cancel < 0) {
                cancel = 0; // someone must end a request whose caller never reads
            }
            plans.add(new Plan(tokens, fault, stop, deadline, consumer, cancel));
        }

        Worker worker = Worker.builder().device(CpuDeviceConfig.withCores(2).withMemoryBudget(1 << 20)).tracing(true).build();
        Session<Plan> session = worker.openSession(PROGRAM,
                SessionConfig.defaults().maxActive(8).maxQueued(requests).memoryPerRequest(1024).streamBuffer(4));
        List<CompletableFuture<List<Integer>>> received = new ArrayList<>();
        List<TokenStream> streams = new ArrayList<>();
        for (int i = 0; i < requests; i++) {
            Plan plan = plans.get(i);
            RequestOptions options = RequestOptions.defaults();
            if (plan.stopAt() > 0) {
                int stopAt = plan.stopAt();
                options = options.stopWhen(t -> t.asInt() == stopAt);
            }
            if (plan.deadlineMicros() > 0) {
                options = options.deadline(Duration.ofNanos(plan.deadlineMicros() * 1000));
            }
            TokenStream stream = session.submit(plan, options);
            streams.add(stream);
            received.add(consume(stream, plan, random.split()));
            if (random.nextInt(4) == 0) {
                LockSupport.parkNanos(random.nextInt(200_000)); // arrival spacing, not synchronisation
            }
        }

        Map<Status, Integer> byStatus = new EnumMap<>(Status.class);
        for (int i = 0; i < requests; i++) {
            Plan plan = plans.get(i);
            Outcome outcome = streams.get(i).completion().get(120, TimeUnit.SECONDS);
            List<Integer> tokens = received.get(i).get(120, TimeUnit.SECONDS);
            byStatus.merge(outcome.status(), 1, Integer::sum);
            String where = "request " + i + " " + plan + " ended " + outcome + " with tokens " + tokens;
            assertThat(allowed(plan)).as(where).contains(outcome.status());
            for (int k = 0; k < tokens.size(); k++) {
                assertThat(tokens.get(k)).as(where).isEqualTo(k + 1);
            }
            assertThat((long) tokens.size()).as(where).isLessThanOrEqualTo(outcome.tokens());
            if (outcome.status() == Status.COMPLETED && plan.consumer() != Consumer.NEVER_READS) {
                int expected = plan.stopAt() > 0 ? plan.stopAt() : plan.tokens();
                assertThat(tokens).as(where).hasSize(expected);
            }
            if (outcome.status() == Status.FAILED) {
                assertThat(outcome.cause()).as(where).isInstanceOf(KernelFailedException.class)
                        .hasMessageContaining("kernel fault");
            }
        }

        session.close();
        List<TraceEvent> events = worker.traceEvents();
        worker.close();
        Map<Long, Long> endsPerRequest = events.stream().filter(e -> e.kind() == TraceEvent.Kind.REQUEST)
                .collect(Collectors.groupingBy(TraceEvent::requestId, Collectors.counting()));
        assertThat(endsPerRequest).as("one REQUEST end per request").hasSize(requests);
        assertThat(endsPerRequest.values()).as("ended exactly once").containsOnly(1L);
        assertThat(worker.memoryInUse()).as("device memory after the soak").isZero();
        assertThat(session.stats().finished().values().stream().mapToLong(Long::longValue).sum()).isEqualTo(requests);
        // Programs, deliveries, subscribers and teardowns run on virtual threads, which
        // Thread.getAllStackTraces() cannot see: the worker's own registry tracks each from
        // before it starts until its last action. Once terminated, nothing may still run
        // runtime or user code except threads finishing their last instructions.
        assertThat(worker.terminated()).isDone();
        for (Thread thread : worker.runtimeThreads()) {
            thread.join(TimeUnit.SECONDS.toMillis(10));
        }
        assertThat(worker.runtimeThreads()).as("runtime virtual threads after close").isEmpty();
        Set<Thread> left = Thread.getAllStackTraces().keySet().stream()
                .filter(t -> t.getName().startsWith(worker.name() + "-") && t.isAlive())
                .collect(Collectors.toSet());
        for (Thread thread : left) {
            thread.join(TimeUnit.SECONDS.toMillis(10)); // cores and the timer exit once shut down
        }
        assertThat(left).as("runtime platform threads after close").noneMatch(Thread::isAlive);
        // Every kind of end happened, so the soak exercised what it claims to.
        assertThat(byStatus.keySet()).as("statuses seen: %s", byStatus)
                .contains(Status.COMPLETED, Status.CANCELLED, Status.FAILED, Status.DEADLINE_EXCEEDED);
    }

    /** The statuses a plan may end with, given that its disruptions race. */
    static Set<Status> allowed(Plan plan) {
        Set<Status> allowed = new java.util.HashSet<>();
        // The fault task touches only its own scratch buffer, so it may run ahead of earlier
        // steps: a fault planned after the stop token may still come first.
        boolean faultBeforeStop = plan.faultAtStep() >= 0 && (plan.stopAt() < 0 || plan.faultAtStep() < plan.stopAt());
        if (plan.faultAtStep() >= 0) {
            allowed.add(Status.FAILED);
        }
        if (!faultBeforeStop) {
            allowed.add(Status.COMPLETED);
        }
        if (plan.cancelAfterTokens() >= 0) {
            allowed.add(Status.CANCELLED);
        }
        if (plan.deadlineMicros() > 0) {
            allowed.add(Status.DEADLINE_EXCEEDED);
        }
        return allowed;
    }

    /** Consumes a stream the way the plan says, returning the token values it saw. */
    static CompletableFuture<List<Integer>> consume(TokenStream stream, Plan plan, SplittableRandom random) {
        CompletableFuture<List<Integer>> result = new CompletableFuture<>();
        List<Integer> seen = new CopyOnWriteArrayList<>();
        Runnable maybeCancel = () -> {
            if (plan.cancelAfterTokens() >= 0 && seen.size() == plan.cancelAfterTokens()) {
                stream.cancel();
            }
        };
        switch (plan.consumer()) {
            case FAST, SLOW -> Thread.ofVirtual().start(() -> {
                maybeCancel.run();
                try {
                    for (Token token : stream) {
                        seen.add(token.asInt());
                        maybeCancel.run();
                        if (plan.consumer() == Consumer.SLOW) {
                            LockSupport.parkNanos(50_000); // a slow caller, not synchronisation
                        }
                    }
                } catch (StreamTerminatedException expected) {
                    // the outcome is checked through completion()
                }
                result.complete(seen);
            });
            case SUBSCRIBER -> stream.subscribe(new Flow.Subscriber<>() {
                Flow.Subscription subscription;

                @Override
                public void onSubscribe(Flow.Subscription s) {
                    subscription = s;
                    maybeCancel.run();
                    s.request(1 + random.nextInt(3));
                }

                @Override
                public void onNext(Token item) {
                    seen.add(item.asInt());
                    maybeCancel.run();
                    subscription.request(1);
                }

                @Override
                public void onError(Throwable throwable) {
                    result.complete(seen);
                }

                @Override
                public void onComplete() {
                    result.complete(seen);
                }
            });
            case NEVER_READS -> {
                if (plan.cancelAfterTokens() >= 0) {
                    Thread.ofVirtual().start(() -> {
                        LockSupport.parkNanos(random.nextInt(1_000_000)); // cancel at a random moment
                        stream.cancel();
                    });
                }
                stream.completion().thenRun(() -> result.complete(seen));
            }
        }
        return result;
    }
}
