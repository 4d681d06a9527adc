package dev.tandem.session;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tandem.Outcome;
import dev.tandem.Status;
import dev.tandem.Token;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The outcome's token count against the order of a request's end: the thread that wins the
 * request's termination ends the stream a moment later, and a teardown on another thread that
 * reads the count in between must get the count, not -1 ({@code LessonsTest}'s
 * {@code theStreamsEndAndTheCompletionCountTheSameTokens} saw -1 once in about 400 cancels).
 * Here the window is held open: the reader starts first and must wait for {@link TokenStreamImpl#end}.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class TokenStreamEndTest {

    @Test
    void aCountReadBeforeTheEndWaitsForIt() throws Exception {
        TokenStreamImpl stream = new TokenStreamImpl(new Owner());
        stream.offer(new Token(1, 0, new byte[4]));
        stream.offer(new Token(1, 1, new byte[4]));
        CompletableFuture<Long> read = new CompletableFuture<>();
        Thread reader = Thread.ofPlatform().start(() -> read.complete(stream.tokensAtEnd()));
        awaitWaiting(reader);
        assertThat(read).as("the count before the end").isNotDone();

        stream.end(Status.COMPLETED, tokens -> outcome(Status.COMPLETED, tokens));

        assertThat(read.get(10, TimeUnit.SECONDS)).as("tokens offered before a completed end").isEqualTo(2);
        assertThat(stream.tokensAtEnd()).isEqualTo(2);
    }

    @Test
    void anInterruptDoesNotEndTheWaitAndIsKept() throws Exception {
        TokenStreamImpl stream = new TokenStreamImpl(new Owner());
        stream.offer(new Token(1, 0, new byte[4]));
        CompletableFuture<Long> read = new CompletableFuture<>();
        CompletableFuture<Boolean> interrupted = new CompletableFuture<>();
        Thread reader = Thread.ofPlatform().start(() -> {
            read.complete(stream.tokensAtEnd());
            interrupted.complete(Thread.currentThread().isInterrupted());
        });
        awaitWaiting(reader);
        reader.interrupt();
        // Back to waiting, the interrupt taken (its flag cleared by the InterruptedException): the
        // end has not come, and only the reader's own restoring can set the flag again.
        while (reader.isInterrupted() || reader.getState() != Thread.State.WAITING) {
            assertThat(reader.isAlive()).as("the reader returned at the interrupt").isTrue();
            Thread.onSpinWait();
        }
        assertThat(read).isNotDone();

        stream.end(Status.CANCELLED, tokens -> outcome(Status.CANCELLED, tokens));

        assertThat(read.get(10, TimeUnit.SECONDS)).as("tokens received (none) at a cancel").isZero();
        assertThat(interrupted.get(10, TimeUnit.SECONDS)).as("the interrupt kept").isTrue();
    }

    /** Until the thread waits (on the end's monitor): a state change, no sleeps; the test's timeout bounds it. */
    private static void awaitWaiting(Thread thread) {
        while (thread.getState() != Thread.State.WAITING) {
            assertThat(thread.isAlive()).as("the reader returned without waiting").isTrue();
            Thread.onSpinWait();
        }
    }

    private static Outcome outcome(Status status, long tokens) {
        return new Outcome(1, status, null, tokens, Duration.ZERO, null, Duration.ZERO);
    }

    private static final class Owner implements StreamOwner {
        private final CompletableFuture<Outcome> completion = new CompletableFuture<>();
        private final RuntimeThreads threads = new RuntimeThreads("test");

        @Override
        public long id() {
            return 1;
        }

        @Override
        public void tokenTaken(long step) {}

        @Override
        public boolean terminate(Status status, Throwable cause) {
            return true;
        }

        @Override
        public RuntimeThreads threads() {
            return threads;
        }

        @Override
        public String threadName(String role) {
            return "test-" + role;
        }

        @Override
        public CompletableFuture<Outcome> completion() {
            return completion;
        }
    }
}
