package dev.tandem.server;

import dev.tandem.Outcome;
import dev.tandem.Token;
import dev.tandem.TokenStream;
import java.time.Duration;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Flow;
import java.util.function.UnaryOperator;

/**
 * For tests: records every request's stream and holds its reader before the first token until
 * {@link #open()} (or until the request ends), so a request keeps its slot as long as a test
 * needs it to.
 */
final class GatedStreams implements UnaryOperator<TokenStream> {
    final List<TokenStream> streams = new CopyOnWriteArrayList<>();
    private final CompletableFuture<Void> gate = new CompletableFuture<>();

    /** Streams that are never held. */
    static GatedStreams passThrough() {
        GatedStreams g = new GatedStreams();
        g.open();
        return g;
    }

    void open() {
        gate.complete(null);
    }

    @Override
    public TokenStream apply(TokenStream stream) {
        streams.add(stream);
        return new TokenStream() {
            @Override
            public long requestId() {
                return stream.requestId();
            }

            @Override
            public Iterator<Token> iterator() {
                Iterator<Token> it = stream.iterator();
                return new Iterator<>() {
                    @Override
                    public boolean hasNext() {
                        CompletableFuture.anyOf(gate, stream.completion()).join();
                        return it.hasNext();
                    }

                    @Override
                    public Token next() {
                        return it.next();
                    }
                };
            }

            @Override
            public Token poll(Duration timeout) throws InterruptedException {
                return stream.poll(timeout);
            }

            @Override
            public CompletableFuture<Outcome> completion() {
                return stream.completion();
            }

            @Override
            public void cancel() {
                stream.cancel();
            }

            @Override
            public boolean isDone() {
                return stream.isDone();
            }

            @Override
            public void subscribe(Flow.Subscriber<? super Token> subscriber) {
                stream.subscribe(subscriber);
            }
        };
    }
}
