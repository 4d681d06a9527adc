package dev.tandem;

import static dev.tandem.Access.readWrite;

import java.lang.foreign.ValueLayout;
import java.util.concurrent.Flow;
import org.reactivestreams.tck.TestEnvironment;
import org.testng.annotations.AfterClass;

/**
 * The Reactive Streams TCK (1.0.4, {@code java.util.concurrent.Flow} flavour) against
 * {@link TokenStream}'s publisher: a request of {@code n} steps is a publisher of exactly
 * {@code n} tokens, a request whose program throws is a failed publisher. Runs on the TestNG
 * engine of the JUnit Platform with the rest of the suite; every required rule passes.
 *
 * <p>Optional rules not verified:
 * <ul>
 *   <li>{@code optional_spec111_maySupportMultiSubscribe} and
 *       {@code optional_spec111_registeredSubscribersMustReceiveOnNextOrOnCompleteSignals}
 *       and {@code optional_spec111_multicast_*}: a stream is the tokens of one request, for
 *       one subscriber (a second one gets {@code onSubscribe} and then {@code onError}, as
 *       rule 1.9 permits), so multi-subscribe does not apply;
 *   <li>the {@code untested_*} rules, which the TCK itself cannot test.
 * </ul>
 */
public class TokenStreamTckTest extends SingleSubscriberVerification {
    /**
     * Expected signals are awaited up to 1 s (the TCK returns as soon as they arrive, except in
     * its expectError, which always waits the whole timeout); "no signal" windows are 50 ms.
     */
    private static final TestEnvironment ENV = new TestEnvironment(1_000, 50);

    static final Kernel INCREMENT = Kernel.of("increment", c -> {
        var x = c.region(0);
        x.set(ValueLayout.JAVA_LONG, 0, x.get(ValueLayout.JAVA_LONG, 0) + 1);
    });

    /** A token per step: 1, 2, ..., n. */
    static final Program<Long> COUNTER = (o, n) -> {
        Buffer counter = o.allocate(ValueLayout.JAVA_LONG, 1);
        for (long i = 0; i < n; i++) {
            o.submit(INCREMENT, readWrite(counter));
            o.endStep(counter.region());
        }
    };

    static final Program<Long> FAILING = (o, n) -> {
        throw new IllegalStateException("the program of a failed publisher");
    };

    private final Worker worker = Worker.create(CpuDeviceConfig.withCores(2));

    public TokenStreamTckTest() {
        super(ENV, 1_000);
    }

    @AfterClass
    public void closeWorker() {
        worker.close();
    }

    @Override
    public Flow.Publisher<Token> createFlowPublisher(long elements) {
        return worker.run(COUNTER, elements, RunOptions.defaults().withStreamBuffer(8));
    }

    @Override
    public Flow.Publisher<Token> createFailedFlowPublisher() {
        return worker.run(FAILING, 0L);
    }

}
