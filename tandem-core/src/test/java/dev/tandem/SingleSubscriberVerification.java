package dev.tandem;

import org.reactivestreams.tck.TestEnvironment;
import org.reactivestreams.tck.flow.FlowPublisherVerification;
import org.testng.SkipException;
import org.testng.annotations.Test;

/**
 * The TCK's publisher verification for a {@link TokenStream}: one subscriber per stream (a
 * second one gets {@code onSubscribe} and then {@code onError}, as rule 1.9 permits), so the
 * optional multi-subscribe rules are skipped here, for every kind of stream alike.
 */
public abstract class SingleSubscriberVerification extends FlowPublisherVerification<Token> {

    protected SingleSubscriberVerification(TestEnvironment env, long publisherReferenceGCTimeoutMillis) {
        super(env, publisherReferenceGCTimeoutMillis);
    }

    /** Streams are unbounded in length; the TCK's own maximum is kept. */
    @Override
    public long maxElementsFromPublisher() {
        return Long.MAX_VALUE - 1;
    }

    @Override
    @Test
    public void optional_spec111_maySupportMultiSubscribe() {
        throw new SkipException("a TokenStream has one subscriber: the tokens of one request");
    }

    @Override
    @Test
    public void optional_spec111_registeredSubscribersMustReceiveOnNextOrOnCompleteSignals() {
        throw new SkipException("a TokenStream has one subscriber: the tokens of one request");
    }

    @Override
    @Test
    public void optional_spec111_multicast_mustProduceTheSameElementsInTheSameSequenceToAllOfItsSubscribersWhenRequestingOneByOne() {
        throw new SkipException("a TokenStream has one subscriber: the tokens of one request");
    }

    @Override
    @Test
    public void optional_spec111_multicast_mustProduceTheSameElementsInTheSameSequenceToAllOfItsSubscribersWhenRequestingManyUpfront() {
        throw new SkipException("a TokenStream has one subscriber: the tokens of one request");
    }

    @Override
    @Test
    public void optional_spec111_multicast_mustProduceTheSameElementsInTheSameSequenceToAllOfItsSubscribersWhenRequestingManyUpfrontAndCompleteAsExpected() {
        throw new SkipException("a TokenStream has one subscriber: the tokens of one request");
    }
}
