package dev.tandem.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Stream;

/**
 * Closed-loop streaming clients against an OpenAI-compatible {@code /v1/completions} endpoint:
 * each client sends a completion, reads its server-sent events to the end, and sends the next,
 * until the run's time is up. The same load for tandem's server and for llama.cpp's.
 */
public final class ServeLoad {
    private static final ObjectMapper JSON = new ObjectMapper();

    private ServeLoad() {}

    /**
     * One concurrency level.
     *
     * @param completions      completions that ended normally
     * @param tokens           their tokens (the server's usage when it reports one, else content chunks)
     * @param tokensPerSecond  tokens over the run's wall time (first send to last end)
     * @param ttftP50Ms        time from send to the first content chunk, median
     * @param itlP50Ms         time between content chunks of one stream, median
     * @param errors           completions that failed (status, framing, transport)
     */
    public record Result(int clients, int completions, long tokens, double seconds, double tokensPerSecond,
            double ttftP50Ms, double ttftP99Ms, double itlP50Ms, double itlP99Ms, int errors, String firstError) {}

    /** One completion's figures. */
    private record Stream1(long tokens, double ttftMs, double[] itlMs) {}

    /**
     * Runs {@code clients} clients for about {@code duration}, each completing at least once.
     *
     * @param extra fields added to every request body (e.g. {@code ignore_eos})
     */
    public static Result run(URI base, String model, List<String> prompts, int clients, int maxTokens,
            Duration duration, ObjectNode extra) throws InterruptedException {
        HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
                .connectTimeout(Duration.ofSeconds(10)).build();
        List<List<Stream1>> perClient = new ArrayList<>();
        int[] errors = new int[clients];
        AtomicReference<String> firstError = new AtomicReference<>();
        CountDownLatch done = new CountDownLatch(clients);
        long start = System.nanoTime();
        long until = start + duration.toNanos();
        long[] lastEnd = new long[clients];
        for (int c = 0; c < clients; c++) {
            List<Stream1> mine = new ArrayList<>();
            perClient.add(mine);
            int client = c;
            Thread.ofVirtual().name("serve-load-" + c).start(() -> {
                try {
                    int k = 0;
                    do {
                        String prompt = prompts.get((client + k++) % prompts.size());
                        try {
                            mine.add(complete(http, base, model, prompt, maxTokens, extra));
                        } catch (IOException | RuntimeException e) {
                            errors[client]++;
                            firstError.compareAndSet(null, e.toString());
                            if (errors[client] > 3) {
                                break;
                            }
                        }
                        lastEnd[client] = System.nanoTime();
                    } while (System.nanoTime() < until);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                } finally {
                    done.countDown();
                }
            });
        }
        done.await();
        long end = Arrays.stream(lastEnd).max().orElse(System.nanoTime());
        double seconds = (end - start) / 1e9;
        List<Double> ttft = new ArrayList<>();
        List<Double> itl = new ArrayList<>();
        long tokens = 0;
        int completions = 0;
        for (List<Stream1> mine : perClient) {
            for (Stream1 s : mine) {
                completions++;
                tokens += s.tokens();
                ttft.add(s.ttftMs());
                for (double d : s.itlMs()) {
                    itl.add(d);
                }
            }
        }
        return new Result(clients, completions, tokens, seconds, tokens / seconds, percentile(ttft, 50),
                percentile(ttft, 99), percentile(itl, 50), percentile(itl, 99), Arrays.stream(errors).sum(),
                firstError.get());
    }

    private static Stream1 complete(HttpClient http, URI base, String model, String prompt, int maxTokens,
            ObjectNode extra) throws IOException, InterruptedException {
        ObjectNode body = JSON.createObjectNode();
        body.put("model", model).put("prompt", prompt).put("max_tokens", maxTokens).put("temperature", 0)
                .put("stream", true);
        body.putObject("stream_options").put("include_usage", true);
        if (extra != null) {
            body.setAll(extra);
        }
        HttpRequest request = HttpRequest.newBuilder(base.resolve("/v1/completions"))
                .header("Content-Type", "application/json").timeout(Duration.ofMinutes(5))
                .POST(HttpRequest.BodyPublishers.ofString(body.toString())).build();
        long sent = System.nanoTime();
        HttpResponse<Stream<String>> response = http.send(request, HttpResponse.BodyHandlers.ofLines());
        if (response.statusCode() != 200) {
            String text;
            try (Stream<String> lines = response.body()) {
                text = String.join("\n", lines.toList());
            }
            throw new IOException("HTTP " + response.statusCode() + ": " + text);
        }
        long first = 0;
        long previous = 0;
        long chunks = 0;
        long usage = -1;
        boolean finished = false;
        List<Double> gaps = new ArrayList<>();
        try (Stream<String> lines = response.body()) {
            Iterator<String> it = lines.iterator();
            while (it.hasNext()) {
                String line = it.next();
                if (!line.startsWith("data:")) {
                    continue;
                }
                String data = line.substring(5).trim();
                if (data.equals("[DONE]")) {
                    finished = true;
                    break;
                }
                long now = System.nanoTime();
                JsonNode chunk = JSON.readTree(data);
                if (chunk.has("error")) {
                    throw new IOException("error event: " + data);
                }
                JsonNode u = chunk.path("usage");
                if (u.has("completion_tokens")) {
                    usage = u.get("completion_tokens").asLong();
                }
                JsonNode choices = chunk.path("choices");
                if (choices.isEmpty()) {
                    continue;
                }
                JsonNode choice = choices.get(0);
                if (!choice.path("finish_reason").isNull() && !choice.path("finish_reason").isMissingNode()
                        && choice.path("text").asText("").isEmpty()) {
                    continue; // the final chunk carries no token
                }
                chunks++;
                if (first == 0) {
                    first = now;
                } else {
                    gaps.add((now - previous) / 1e6);
                }
                previous = now;
            }
        }
        if (!finished) {
            throw new IOException("the stream ended without [DONE]");
        }
        if (first == 0) {
            throw new IOException("the stream had no token");
        }
        return new Stream1(usage >= 0 ? usage : chunks, (first - sent) / 1e6,
                gaps.stream().mapToDouble(Double::doubleValue).toArray());
    }

    static double percentile(List<Double> values, double p) {
        if (values.isEmpty()) {
            return Double.NaN;
        }
        double[] sorted = values.stream().mapToDouble(Double::doubleValue).sorted().toArray();
        int index = (int) Math.ceil(p / 100 * sorted.length) - 1;
        return sorted[Math.max(0, Math.min(sorted.length - 1, index))];
    }
}
