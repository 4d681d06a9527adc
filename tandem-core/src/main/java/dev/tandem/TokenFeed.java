package dev.tandem;

import dev.tandem.session.FeedRun;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;

/**
 * A {@link TokenStream} that its producer fills, for layers that make many users' tokens in one
 * program — a continuous batcher decodes every member's sequence in the same step and hands each
 * member's token to that member's feed. The reader sees a stream like any request's: blocking
 * iteration, {@code poll}, one {@link java.util.concurrent.Flow.Subscriber} against demand,
 * {@code cancel()}, the deadline, and an {@link Outcome} with queued time, time to first token
 * and the tokens it received.
 *
 * <p>The producer {@link #offer offers} tokens in order from one thread, ends the feed with
 * {@link #complete} or {@link #fail} (or learns that the reader cancelled it, the deadline
 * passed, or the worker closed: {@link #isEnded()}, and the builder's {@code onChange}), and
 * {@link #release releases} it once it holds nothing more for it — only then does the stream's
 * {@link TokenStream#completion() completion} complete, on a virtual thread of the worker. A
 * token offered after the end is dropped. {@link #unread()} tells a producer that the reader
 * is behind, so it can pause that one sequence while the others go on.
 *
 * <pre>{@code
 * TokenFeed feed = TokenFeed.builder(worker).deadline(Duration.ofSeconds(30)).onChange(batcher::wake).build();
 * return feed.stream();             // to the user
 * ...
 * if (feed.offer(tokenBytes) < 0) { drop the sequence; feed.release(); }   // on the producer's thread
 * }</pre>
 */
public final class TokenFeed {
    private final FeedRun run;

    private TokenFeed(FeedRun run) {
        this.run = run;
    }

    public static Builder builder(Worker worker) {
        return new Builder(worker);
    }

    /** The reader's side. */
    public TokenStream stream() {
        return run.stream();
    }

    /** The producer has started work on it (the outcome's queued time ends here). */
    public void started() {
        run.started();
    }

    /**
     * Appends one token. Producer thread only.
     *
     * @return the tokens appended so far, or -1 when the feed has ended (the token is dropped)
     */
    public long offer(byte[] bytes) {
        return run.offer(Objects.requireNonNull(bytes, "bytes"));
    }

    /** Appends one little-endian int token; see {@link #offer(byte[])}. */
    public long offerInt(int value) {
        return run.offer(new byte[] {(byte) value, (byte) (value >>> 8), (byte) (value >>> 16), (byte) (value >>> 24)});
    }

    /** Tokens appended that the reader has not taken yet. */
    public long unread() {
        return run.unread();
    }

    /** Tokens appended so far. */
    public long offered() {
        return run.offered();
    }

    /** Ends the stream normally after the tokens offered. @return whether this call ended it */
    public boolean complete() {
        return run.complete();
    }

    /** Ends the stream as FAILED with {@code cause}. @return whether this call ended it */
    public boolean fail(Throwable cause) {
        return run.fail(Objects.requireNonNull(cause, "cause"));
    }

    /** Ends the stream with {@code status}. @return whether this call ended it */
    public boolean end(Status status) {
        return run.terminate(Objects.requireNonNull(status, "status"), null);
    }

    /** Whether the feed has ended, by anyone. */
    public boolean isEnded() {
        return run.status() != null;
    }

    /** How it ended, or null while it runs. */
    public Status status() {
        return run.status();
    }

    /**
     * The producer holds nothing more for it (ends it as COMPLETED if it had not ended); the
     * stream's completion follows. Idempotent.
     */
    public void release() {
        run.release();
    }

    public boolean isReleased() {
        return run.isReleased();
    }

    /** The stream's request id: unique on its worker, shared with requests. */
    public long id() {
        return run.id();
    }

    /** Same as {@code stream().completion()}. */
    public CompletableFuture<Outcome> completion() {
        return run.completion();
    }

    @Override
    public String toString() {
        return run.toString();
    }

    /** Configures one feed. */
    public static final class Builder {
        private final Worker worker;
        private String name;
        private Duration deadline;
        private Runnable onChange = () -> {};

        private Builder(Worker worker) {
            this.worker = Objects.requireNonNull(worker, "worker");
        }

        /** A name for logs and thread names. */
        public Builder name(String value) {
            this.name = value;
            return this;
        }

        /** Ends the feed as DEADLINE_EXCEEDED this long after {@link #build()}; null for none. */
        public Builder deadline(Duration value) {
            if (value != null && value.isNegative()) {
                throw new IllegalArgumentException("deadline = " + value + " must not be negative");
            }
            this.deadline = value;
            return this;
        }

        /**
         * Runs after the feed ends (whoever ended it) and after each token the reader takes, on
         * the thread that caused it; it must be quick and must not block.
         */
        public Builder onChange(Runnable value) {
            this.onChange = Objects.requireNonNull(value, "onChange");
            return this;
        }

        /** @throws IllegalStateException when the worker is closed */
        public TokenFeed build() {
            return new TokenFeed(worker.openFeed(name, deadline, onChange));
        }
    }
}
