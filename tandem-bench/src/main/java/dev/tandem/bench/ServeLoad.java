package dev.tandem.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Closed-loop streaming clients against an OpenAI-compatible {@code /v1/completions} endpoint:
 * each client sends a streamed completion on a fresh connection ({@code Connection: close}, as
 * curl or a script without a session does), reads its server-sent events to {@code [DONE]}, and
 * sends the next, until the run's time is up. The same load for every server. HTTP is spoken
 * over a plain socket, so no client-side connection pool can stand between a server and its
 * figure ({@code bin/serve-load.py} is the independent client the bench checks these against).
 */
public final class ServeLoad {
    private static final ObjectMapper JSON = new ObjectMapper();

    private ServeLoad() {}

    /** What the clients send. */
    public enum Workload {
        /** Every prompt its own: about 40 random words after the client's and the request's number. */
        UNIQUE,
        /** One system prefix of about 500 tokens, then a user turn of its own. */
        SHARED_PREFIX,
        /** Conversations that resend their history with each new user turn (6 turns each). */
        MULTI_TURN;

        public String label() {
            return name().toLowerCase(Locale.ROOT).replace('_', '-');
        }

        public static Workload of(String label) {
            for (Workload w : values()) {
                if (w.label().equals(label)) {
                    return w;
                }
            }
            throw new IllegalArgumentException("workload = " + label + " is not known; known: unique, shared-prefix,"
                    + " multi-turn");
        }
    }

    private static final String[] WORDS = ("time little girl park dog tree ball sun happy friend went play saw big"
            + " red blue day bird found house garden cat mom dad said wanted very fun jump run water boat fish flower"
            + " sky green small cake toy smile walk home door window rain snow hill").split(" ");

    static String words(SplittableRandom random, int n) {
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < n; i++) {
            if (i > 0) {
                b.append(' ');
            }
            b.append(WORDS[random.nextInt(WORDS.length)]);
        }
        return b.toString();
    }

    /** The shared prefix: 190 words, about 500 tokens on the embedded vocabulary. */
    static final String SYSTEM = words(new SplittableRandom(500), 190);

    /** The prompts one client sends. */
    static final class Prompts {
        private final Workload workload;
        private final int client;
        private final long run;
        private final SplittableRandom random;
        private int k;
        private StringBuilder history;

        Prompts(Workload workload, int client, long run) {
            this.workload = workload;
            this.client = client;
            this.run = run;
            this.random = new SplittableRandom(run * 100_003 + client);
        }

        String next() {
            k++;
            return switch (workload) {
                case UNIQUE -> run + " " + client + " " + k + " " + words(random, 40);
                case SHARED_PREFIX -> SYSTEM + " User: " + words(random, 16) + " Assistant:";
                case MULTI_TURN -> {
                    if (history == null || k % 6 == 1) {
                        history = new StringBuilder(run + " " + words(random, 60));
                    }
                    history.append(" User: ").append(words(random, 12)).append(" Assistant:");
                    yield history.toString();
                }
            };
        }

        void reply(String text) {
            if (workload == Workload.MULTI_TURN && history != null) {
                history.append(text);
            }
        }
    }

    /**
     * One concurrency level.
     *
     * @param completions      completions that ended normally
     * @param tokens           their tokens (the server's usage when it reports one, else content chunks)
     * @param promptTokens     their prompt tokens, by the server's usage (0 where it reports none)
     * @param tokensPerSecond  tokens over the run's wall time (first send to last end)
     * @param ttftP50Ms        time from send to the first content chunk, median
     * @param itlP50Ms         time between content chunks of one stream, median
     * @param errors           completions that failed (status, framing, transport)
     */
    public record Result(int clients, int completions, long tokens, long promptTokens, double seconds,
            double tokensPerSecond, double ttftMeanMs, double ttftP50Ms, double ttftP99Ms, double itlP50Ms,
            double itlP99Ms, int errors, String firstError) {}

    /** One completion's figures. */
    private record Stream1(long tokens, long promptTokens, double ttftMs, double[] itlMs, String text) {}

    /**
     * Runs so far in this JVM: each run's prompts are its own, so no server finds a unique prompt or a
     * conversation of an earlier run (or an earlier server's turn) in its cache; the shared prefix
     * is the same in every run, as a system prompt is.
     */
    private static final java.util.concurrent.atomic.AtomicLong RUNS = new java.util.concurrent.atomic.AtomicLong(
            System.nanoTime() & 0xffff);

    /** Runs {@code clients} clients for about {@code seconds}, each completing at least once. */
    public static Result run(URI base, String model, Workload workload, int clients, int maxTokens, double seconds)
            throws InterruptedException {
        List<List<Stream1>> perClient = new ArrayList<>();
        int[] errors = new int[clients];
        AtomicReference<String> firstError = new AtomicReference<>();
        CountDownLatch done = new CountDownLatch(clients);
        long start = System.nanoTime();
        long until = start + (long) (seconds * 1e9);
        long[] lastEnd = new long[clients];
        long run = RUNS.incrementAndGet();
        for (int c = 0; c < clients; c++) {
            List<Stream1> mine = new ArrayList<>();
            perClient.add(mine);
            int client = c;
            Thread.ofPlatform().name("serve-load-" + c).daemon().start(() -> {
                Prompts prompts = new Prompts(workload, client, run);
                try {
                    do {
                        try {
                            Stream1 s = complete(base, model, prompts.next(), maxTokens);
                            mine.add(s);
                            prompts.reply(s.text());
                        } catch (IOException | RuntimeException e) {
                            errors[client]++;
                            firstError.compareAndSet(null, e.toString());
                            if (errors[client] > 3) {
                                break;
                            }
                        }
                        lastEnd[client] = System.nanoTime();
                    } while (System.nanoTime() < until);
                } finally {
                    done.countDown();
                }
            });
        }
        done.await();
        long end = Arrays.stream(lastEnd).max().orElse(System.nanoTime());
        double wall = (end - start) / 1e9;
        List<Double> ttft = new ArrayList<>();
        List<Double> itl = new ArrayList<>();
        long tokens = 0;
        long promptTokens = 0;
        int completions = 0;
        for (List<Stream1> mine : perClient) {
            for (Stream1 s : mine) {
                completions++;
                tokens += s.tokens();
                promptTokens += s.promptTokens();
                ttft.add(s.ttftMs());
                for (double d : s.itlMs()) {
                    itl.add(d);
                }
            }
        }
        return new Result(clients, completions, tokens, promptTokens, wall, tokens / wall,
                ttft.stream().mapToDouble(Double::doubleValue).average().orElse(Double.NaN), percentile(ttft, 50),
                percentile(ttft, 99), percentile(itl, 50), percentile(itl, 99), Arrays.stream(errors).sum(),
                firstError.get());
    }

    private static Stream1 complete(URI base, String model, String prompt, int maxTokens) throws IOException {
        ObjectNode body = JSON.createObjectNode();
        body.put("model", model).put("prompt", prompt).put("max_tokens", maxTokens).put("temperature", 0)
                .put("stream", true).put("ignore_eos", true);
        body.putObject("stream_options").put("include_usage", true);
        byte[] payload = body.toString().getBytes(StandardCharsets.UTF_8);
        try (Socket socket = new Socket(base.getHost(), base.getPort())) {
            socket.setTcpNoDelay(true);
            socket.setSoTimeout(300_000);
            long sent = System.nanoTime();
            OutputStream out = socket.getOutputStream();
            out.write(("POST /v1/completions HTTP/1.1\r\nHost: " + base.getHost() + ":" + base.getPort()
                    + "\r\nContent-Type: application/json\r\nAccept: text/event-stream\r\nContent-Length: "
                    + payload.length + "\r\nConnection: close\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
            out.write(payload);
            out.flush();
            HttpBody in = new HttpBody(socket.getInputStream());
            String status = in.headerLine();
            if (status == null || !status.startsWith("HTTP/1.1 200")) {
                throw new IOException("status " + status + ": " + in.rest());
            }
            long first = 0;
            long previous = 0;
            long chunks = 0;
            long usage = -1;
            long prompted = 0;
            boolean finished = false;
            List<Double> gaps = new ArrayList<>();
            StringBuilder text = new StringBuilder();
            String line;
            while ((line = in.line()) != null) {
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
                    prompted = u.path("prompt_tokens").asLong(0);
                }
                JsonNode choices = chunk.path("choices");
                if (choices.isEmpty()) {
                    continue;
                }
                JsonNode choice = choices.get(0);
                String piece = choice.path("text").asText("");
                if (!choice.path("finish_reason").isNull() && !choice.path("finish_reason").isMissingNode()
                        && piece.isEmpty()) {
                    continue; // the final chunk carries no token
                }
                text.append(piece);
                chunks++;
                if (first == 0) {
                    first = now;
                } else {
                    gaps.add((now - previous) / 1e6);
                }
                previous = now;
            }
            if (!finished) {
                throw new IOException("the stream ended without [DONE]");
            }
            if (first == 0) {
                throw new IOException("the stream had no token");
            }
            return new Stream1(usage >= 0 ? usage : chunks, prompted, (first - sent) / 1e6,
                    gaps.stream().mapToDouble(Double::doubleValue).toArray(), text.toString());
        }
    }

    /** An HTTP/1.1 response read as lines: the status line and headers, then the body, chunked or not. */
    static final class HttpBody {
        private final InputStream in;
        private boolean chunked;
        /** The body's bytes not yet read when the response gave its length, else -1 (read to the end). */
        private long left = -1;
        private boolean headersDone;
        private long chunkLeft;
        private boolean ended;

        HttpBody(InputStream in) {
            this.in = new java.io.BufferedInputStream(in, 16384);
        }

        /** The status line, after which the headers are read through. */
        String headerLine() throws IOException {
            String status = rawLine();
            String h;
            while ((h = rawLine()) != null && !h.isEmpty()) {
                String lower = h.toLowerCase(Locale.ROOT);
                if (lower.startsWith("transfer-encoding:") && lower.contains("chunked")) {
                    chunked = true;
                } else if (lower.startsWith("content-length:")) {
                    left = Long.parseLong(lower.substring("content-length:".length()).trim());
                }
            }
            headersDone = true;
            return status;
        }

        /** The next line of the body (without its end), or null at its end. */
        String line() throws IOException {
            ByteArrayOutputStream b = new ByteArrayOutputStream(256);
            int c;
            while ((c = bodyByte()) >= 0) {
                if (c == '\n') {
                    return strip(b);
                }
                b.write(c);
            }
            return b.size() == 0 ? null : strip(b);
        }

        /** The rest of the body, for an error message. */
        String rest() throws IOException {
            StringBuilder b = new StringBuilder();
            String l;
            while ((l = line()) != null && b.length() < 500) {
                b.append(l);
            }
            return b.toString();
        }

        private int bodyByte() throws IOException {
            if (!headersDone || ended) {
                return -1;
            }
            if (!chunked) {
                // a server may keep the connection open whatever the request asked: read what it said it sent
                if (left == 0) {
                    return -1;
                }
                int c = in.read();
                if (c >= 0 && left > 0) {
                    left--;
                }
                return c;
            }
            if (chunkLeft == 0) {
                String size = rawLine();
                if (size != null && size.isEmpty()) {
                    size = rawLine(); // the CRLF after the previous chunk's data
                }
                if (size == null) {
                    ended = true;
                    return -1;
                }
                int semi = size.indexOf(';');
                chunkLeft = Long.parseLong((semi >= 0 ? size.substring(0, semi) : size).trim(), 16);
                if (chunkLeft == 0) {
                    ended = true;
                    return -1;
                }
            }
            int c = in.read();
            if (c >= 0) {
                chunkLeft--;
            }
            return c;
        }

        private String rawLine() throws IOException {
            ByteArrayOutputStream b = new ByteArrayOutputStream(64);
            int c;
            while ((c = in.read()) >= 0) {
                if (c == '\n') {
                    return strip(b);
                }
                b.write(c);
            }
            return b.size() == 0 ? null : strip(b);
        }

        private static String strip(ByteArrayOutputStream b) {
            String s = b.toString(StandardCharsets.UTF_8);
            return s.endsWith("\r") ? s.substring(0, s.length() - 1) : s;
        }
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
