package dev.tandem.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tandem.llm.Completion;
import dev.tandem.llm.EmbeddedModel;
import dev.tandem.llm.GenerateOptions;
import dev.tandem.llm.LanguageModel;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A router's names while one of its models is being made ready ({@link Engine#pendingModel}): a
 * request for it waits for it, then gets it; one that waits past the bound gets 503
 * {@code model_loading} with {@code Retry-After}; one that cannot be made ready 503
 * {@code model_unavailable}; a name no model has is still a 404.
 */
@Timeout(60)
class ModelNamesTest {
    private static final LanguageModel TEXT = LanguageModel.loadText(EmbeddedModel.path());

    /** A router serving {@link #served} now and making {@link #pending} ready. */
    private static final class Router implements Engine {
        final Map<String, Engine> served = new ConcurrentHashMap<>();
        final Map<String, CompletableFuture<Engine>> pending = new ConcurrentHashMap<>();
        final CountDownLatch asked = new CountDownLatch(1);

        @Override
        public LanguageModel model() {
            return TEXT;
        }

        @Override
        public Map<String, ? extends Engine> models() {
            return served;
        }

        @Override
        public CompletableFuture<? extends Engine> pendingModel(String name) {
            asked.countDown();
            return pending.get(name);
        }

        @Override
        public Completion submit(int[] prompt, GenerateOptions options, Duration deadline) {
            throw new UnsupportedOperationException();
        }

        @Override
        public EngineStats stats() {
            return null;
        }

        @Override
        public void close() {}

        @Override
        public List<Long> close(Duration drain) {
            return List.of();
        }
    }

    @Test
    void aRequestForAModelBeingMadeReadyWaitsForItAndGetsIt() throws Exception {
        Router router = new Router();
        Router coming = new Router();
        CompletableFuture<Engine> ready = new CompletableFuture<>();
        router.pending.put("coming", ready);
        ModelNames names = new ModelNames(List.of(), router, false, Duration.ofSeconds(30));
        assertThat(names.isKnown("coming")).as("/v1/models/coming while it loads").isTrue();

        CompletableFuture<ModelNames.Target> target = CompletableFuture.supplyAsync(() -> names.resolve("coming"),
                r -> Thread.ofVirtual().start(r));
        assertThat(router.asked.await(10, TimeUnit.SECONDS)).as("the request asked for the pending model").isTrue();
        ready.complete(coming);
        assertThat(target.get(10, TimeUnit.SECONDS)).isEqualTo(new ModelNames.Target("coming", coming));
    }

    @Test
    void aModelStillLoadingAfterTheWaitIs503WithRetryAfterAndOneThatCannotLoad503() {
        Router router = new Router();
        router.pending.put("slow", new CompletableFuture<>());
        router.pending.put("broken", CompletableFuture.failedFuture(new IllegalStateException("no such file")));
        ModelNames names = new ModelNames(List.of(), router, false, Duration.ofMillis(50));

        assertThatThrownBy(() -> names.resolve("slow")).isInstanceOfSatisfying(ApiException.class, e -> {
            assertThat(e.status()).isEqualTo(503);
            assertThat(e.code()).isEqualTo("model_loading");
            assertThat(e.param()).isEqualTo("model");
            assertThat(e.retryLater()).as("Retry-After").isTrue();
        });
        assertThatThrownBy(() -> names.resolve("broken")).isInstanceOfSatisfying(ApiException.class, e -> {
            assertThat(e.status()).isEqualTo(503);
            assertThat(e.code()).isEqualTo("model_unavailable");
            assertThat(e.getMessage()).contains("no such file");
        });
        assertThatThrownBy(() -> names.resolve("gpt-4o")).isInstanceOfSatisfying(ApiException.class, e -> {
            assertThat(e.status()).isEqualTo(404);
            assertThat(e.retryLater()).isFalse();
        });
        assertThat(names.isKnown("gpt-4o")).isFalse();
    }
}
