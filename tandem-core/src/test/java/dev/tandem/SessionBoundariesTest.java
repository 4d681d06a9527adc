package dev.tandem;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Edges that mutation testing found unchecked in the session package: each limit at and past its value. */
@Timeout(60)
class SessionBoundariesTest {

    private static SchedulingPolicy always(int lane) {
        return (request, step) -> lane;
    }

    private static Outcome runWith(Worker worker, SchedulingPolicy policy) {
        try (Session<Integer> session = worker.openSession(SessionTest.COUNTER,
                SessionConfig.defaults().memoryPerRequest(1 << 16).policy(policy))) {
            // Three tokens fit the stream buffer: no reader needed, and a failed stream is not iterated.
            return session.submit(3, RequestOptions.defaults()).completion().join();
        }
    }

    @Test
    void theFirstAndLastLanesRunAndOneBeyondEitherFailsTheRequestNamingTheLane() {
        try (Worker worker = Worker.create(CpuDeviceConfig.withCores(1))) {
            for (int lane : new int[] {0, SchedulingPolicy.LANES - 1}) {
                Outcome outcome = runWith(worker, always(lane));
                assertThat(outcome.status()).as("lane %d", lane).isEqualTo(Status.COMPLETED);
                assertThat(outcome.tokens()).isEqualTo(3);
            }
            for (int lane : new int[] {-1, SchedulingPolicy.LANES}) {
                Outcome outcome = runWith(worker, always(lane));
                assertThat(outcome.status()).as("lane %d", lane).isEqualTo(Status.FAILED);
                assertThat(outcome.cause()).hasMessageContaining("returned lane " + lane)
                        .hasMessageContaining("outside [0, " + SchedulingPolicy.LANES + ")");
            }
        }
    }

    @Test
    void aRequestMayReserveTheWholeBudgetButNotOneByteMore() {
        long budget = 1 << 20;
        try (Worker worker = Worker.create(CpuDeviceConfig.withCores(1).withMemoryBudget(budget))) {
            try (Session<Integer> session = worker.openSession(SessionTest.COUNTER,
                    SessionConfig.defaults().memoryPerRequest(budget))) {
                TokenStream stream = session.submit(2, RequestOptions.defaults());
                assertThat(stream.completion().join().status()).isEqualTo(Status.COMPLETED);
            }
            try (Session<Integer> session = worker.openSession(SessionTest.COUNTER,
                    SessionConfig.defaults().memoryPerRequest(budget + 1))) {
                assertThatThrownBy(() -> session.submit(2, RequestOptions.defaults()))
                        .isInstanceOf(AdmissionRejectedException.class)
                        .hasMessageContaining("needs " + (budget + 1) + " bytes");
            }
        }
    }

    @Test
    void anOutcomesDurationsAreOrderedFromSubmission() {
        try (Worker worker = Worker.create(CpuDeviceConfig.withCores(1))) {
            Outcome outcome = runWith(worker, SchedulingPolicy.FIFO);
            assertThat(outcome.queued()).isGreaterThanOrEqualTo(Duration.ZERO);
            assertThat(outcome.timeToFirstToken()).isGreaterThanOrEqualTo(outcome.queued());
            assertThat(outcome.total()).isGreaterThanOrEqualTo(outcome.timeToFirstToken());
            assertThat(outcome.total()).as("a short request, measured from its submission")
                    .isLessThan(Duration.ofSeconds(30));
        }
    }
}
