package dev.tandem.server;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Timer;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.time.Duration;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.ToDoubleFunction;

/**
 * The server's meters, scraped as Prometheus text at {@code /metrics}. Names follow the
 * OpenTelemetry generative-AI semantic conventions where one exists (Prometheus spells
 * {@code gen_ai.server.time_to_first_token} as {@code gen_ai_server_time_to_first_token_seconds}):
 *
 * <ul>
 *   <li>{@code gen_ai.server.time_to_first_token}, {@code gen_ai.server.time_per_output_token},
 *       {@code gen_ai.server.request.duration}: histograms, tagged {@code gen_ai.operation.name}
 *       ({@code chat}, {@code text_completion}) and {@code gen_ai.request.model} (the id of the
 *       model that answered: one of several on a router such as a cluster's gateway; a request
 *       refused before its model was known counts under the server's own);</li>
 *   <li>{@code gen_ai.client.token.usage}: tokens per request, tagged {@code gen_ai.token.type}
 *       ({@code input}, {@code output});</li>
 *   <li>{@code tandem.server.requests}: requests by {@code outcome}: {@code stop}, {@code length}
 *       (finished), {@code disconnected} (the client went away), {@code aborted} (cancelled by the
 *       drain, past its deadline, failed), {@code rejected} (429), {@code unavailable} (503),
 *       {@code invalid} (another 4xx), {@code error} (500);</li>
 *   <li>{@code tandem.server.refusals}: every error answer of any route, by {@code status} and
 *       {@code code} (e.g. {@code 404}/{@code not_found}, {@code 401}/{@code invalid_api_key});</li>
 *   <li>{@code tandem.server.tokens.generated}: a counter (its rate is tokens/s);</li>
 *   <li>gauges of the engine: {@code tandem.engine.requests.active}, {@code .queued},
 *       {@code tandem.engine.batch.occupancy}, {@code tandem.engine.kv.blocks.used},
 *       {@code .total}, {@code .cached}, {@code tandem.engine.memory.used}; counters of prompt
 *       tokens {@code tandem.engine.prefix.cache.hits} (taken from the prefix cache) and
 *       {@code .misses} (computed); the engine's own ({@link Engine#bindMeters}: the batcher's
 *       first-token phases, a gateway's routing and failover counters); and
 *       {@code tandem.server.streams.open}.</li>
 * </ul>
 */
final class ServerMetrics {
    private static final Duration[] TTFT_BUCKETS = seconds(0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25,
            0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0);
    private static final Duration[] TPOT_BUCKETS = seconds(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.075,
            0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5);
    private static final Duration[] DURATION_BUCKETS = seconds(0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56,
            5.12, 10.24, 20.48, 40.96, 81.92);
    private static final double[] TOKEN_BUCKETS = {1, 4, 16, 64, 256, 1024, 4096, 16384, 65536};

    private final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    private final String model;
    private final ConcurrentMap<String, Counter> outcomes = new ConcurrentHashMap<>();
    private final ConcurrentMap<String, Counter> refusals = new ConcurrentHashMap<>();
    private final ConcurrentMap<String, Usage> usage = new ConcurrentHashMap<>();
    private final AtomicInteger openStreams = new AtomicInteger();

    /** A model's token meters. */
    private record Usage(Counter tokens, DistributionSummary input, DistributionSummary output) {}

    /** {@code model}: the id of the server's own model, whose meters exist from the start. */
    ServerMetrics(Engine engine, String model) {
        this.model = model;
        usage(model);
        gauge("tandem.engine.requests.active", "Requests generating", engine, e -> e.stats().active());
        gauge("tandem.engine.requests.queued", "Requests waiting to start", engine, e -> e.stats().queued());
        gauge("tandem.engine.batch.occupancy", "Fraction of the batch in use", engine,
                e -> e.stats().batchOccupancy());
        gauge("tandem.engine.kv.blocks.used", "KV-cache blocks in use (0: not paged)", engine,
                e -> e.stats().kvBlocksInUse());
        gauge("tandem.engine.kv.blocks.total", "KV-cache blocks in the pool (0: unknown)", engine,
                e -> e.stats().kvBlocksTotal());
        gauge("tandem.engine.memory.used", "Device bytes in use", engine, e -> e.stats().memoryInUse());
        gauge("tandem.engine.kv.blocks.cached", "KV-cache blocks holding a prefix a prompt may take", engine,
                e -> e.stats().kvBlocksCached());
        FunctionCounter.builder("tandem.engine.prefix.cache.hits", engine, e -> e.stats().cachedPromptTokens())
                .description("Prompt tokens taken from the prefix cache").baseUnit("tokens").register(registry);
        FunctionCounter.builder("tandem.engine.prefix.cache.misses", engine, e -> e.stats().computedPromptTokens())
                .description("Prompt tokens computed").baseUnit("tokens").register(registry);
        engine.bindMeters(registry);
        Gauge.builder("tandem.server.streams.open", openStreams, AtomicInteger::get)
                .description("Streaming responses in progress").register(registry);
    }

    private Usage usage(String model) {
        return usage.computeIfAbsent(model, m -> new Usage(
                Counter.builder("tandem.server.tokens.generated").description("Tokens generated")
                        .tag("gen_ai.request.model", m).register(registry),
                tokenUsage(m, "input"), tokenUsage(m, "output")));
    }

    private DistributionSummary tokenUsage(String model, String type) {
        return DistributionSummary.builder("gen_ai.client.token.usage").description("Tokens per request")
                .tag("gen_ai.token.type", type).tag("gen_ai.request.model", model)
                .serviceLevelObjectives(TOKEN_BUCKETS).register(registry);
    }

    private void gauge(String name, String description, Engine engine, ToDoubleFunction<Engine> value) {
        Gauge.builder(name, engine, value).description(description).register(registry);
    }

    private static Duration[] seconds(double... values) {
        Duration[] durations = new Duration[values.length];
        for (int i = 0; i < values.length; i++) {
            durations[i] = Duration.ofNanos(Math.round(values[i] * 1e9));
        }
        return durations;
    }

    private Timer timer(String name, String description, String model, String operation, Duration[] buckets) {
        return Timer.builder(name).description(description).tag("gen_ai.operation.name", operation)
                .tag("gen_ai.request.model", model).serviceLevelObjectives(buckets).register(registry);
    }

    /** One request's end: its outcome, and its figures when it generated; {@code model}: the id of the model that answered. */
    void request(String model, String operation, String outcome, int promptTokens, int completionTokens,
            long startNanos, long firstTokenNanos, long endNanos) {
        outcomes.computeIfAbsent(model + "/" + operation + "/" + outcome, k -> Counter.builder("tandem.server.requests")
                .description("Requests by outcome").tag("gen_ai.operation.name", operation).tag("outcome", outcome)
                .tag("gen_ai.request.model", model).register(registry)).increment();
        if (promptTokens <= 0) {
            return; // rejected before it ran
        }
        Usage u = usage(model);
        u.input().record(promptTokens);
        u.output().record(completionTokens);
        u.tokens().increment(completionTokens);
        timer("gen_ai.server.request.duration", "Time from receipt to the last token", model, operation, DURATION_BUCKETS)
                .record(Duration.ofNanos(endNanos - startNanos));
        if (firstTokenNanos > 0) {
            timer("gen_ai.server.time_to_first_token", "Time from receipt to the first token", model, operation,
                    TTFT_BUCKETS)
                    .record(Duration.ofNanos(firstTokenNanos - startNanos));
            if (completionTokens > 1) {
                timer("gen_ai.server.time_per_output_token", "Time per output token after the first", model, operation,
                        TPOT_BUCKETS).record(Duration.ofNanos((endNanos - firstTokenNanos) / (completionTokens - 1)));
            }
        }
    }

    /** A request rejected before it ran (counted under the server's own model). */
    void rejected(String operation, String outcome) {
        request(model, operation, outcome, 0, 0, 0, 0, 0);
    }

    /** An error answer of {@code status} and {@code code}: {@code tandem.server.refusals}. */
    void refused(int status, String code) {
        refusals.computeIfAbsent(status + "/" + code, k -> Counter.builder("tandem.server.refusals")
                .description("Error answers by status and code").tag("status", Integer.toString(status))
                .tag("code", code).register(registry)).increment();
    }

    void streamOpened() {
        openStreams.incrementAndGet();
    }

    void streamClosed() {
        openStreams.decrementAndGet();
    }

    /** The Prometheus text exposition. */
    String scrape() {
        return registry.scrape();
    }
}
