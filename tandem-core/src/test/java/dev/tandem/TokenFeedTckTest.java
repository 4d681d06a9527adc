package dev.tandem;

import java.util.concurrent.Flow;
import java.util.concurrent.Semaphore;
import org.reactivestreams.tck.TestEnvironment;
import org.testng.annotations.AfterClass;

/**
 * The Reactive Streams TCK against the stream of a {@link TokenFeed}: a producer thread offers
 * {@code n} tokens, pausing while the reader has 8 unread (as a batcher pauses a member whose
 * reader is behind), then completes and releases the feed; a failed publisher is a feed failed
 * before its first token. Skipped optional rules as in {@link SingleSubscriberVerification}: one subscriber
 * per stream.
 */
public class TokenFeedTckTest extends SingleSubscriberVerification {
    private static final TestEnvironment ENV = new TestEnvironment(1_000, 50);

    private final Worker worker = Worker.create(CpuDeviceConfig.withCores(1));

    public TokenFeedTckTest() {
        super(ENV, 1_000);
    }

    @AfterClass
    public void closeWorker() {
        worker.close();
    }

    /** A feed that a producer fills with 1, 2, ..., n, at most 8 ahead of its reader. */
    static TokenFeed counting(Worker worker, long n) {
        Semaphore changed = new Semaphore(0);
        TokenFeed feed = TokenFeed.builder(worker).name("count-" + n).onChange(changed::release).build();
        Thread.ofVirtual().start(() -> {
            try {
                feed.started();
                for (long i = 1; i <= n && !feed.isEnded(); i++) {
                    while (feed.unread() >= 8 && !feed.isEnded()) {
                        changed.acquire();
                    }
                    feed.offerInt((int) i);
                }
                feed.complete();
            } catch (InterruptedException e) {
                feed.fail(e);
            } finally {
                feed.release();
            }
        });
        return feed;
    }

    @Override
    public Flow.Publisher<Token> createFlowPublisher(long elements) {
        return counting(worker, elements).stream();
    }

    @Override
    public Flow.Publisher<Token> createFailedFlowPublisher() {
        TokenFeed feed = TokenFeed.builder(worker).build();
        feed.fail(new IllegalStateException("the producer of a failed publisher"));
        feed.release();
        return feed.stream();
    }

}
