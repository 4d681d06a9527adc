package dev.tandem.bench;

import dev.tandem.CpuDeviceConfig;
import dev.tandem.Worker;
import dev.tandem.llm.Batcher;
import dev.tandem.llm.BatcherConfig;
import dev.tandem.llm.Completion;
import dev.tandem.llm.GenerateOptions;
import dev.tandem.llm.LanguageModel;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * {@code tandem bench batch}: what the batcher's prefill order buys in time to first token.
 * While {@code decoders} members decode, one member with a long prompt and {@code shorts}
 * members with short prompts arrive together (the long one first); the figure is the short
 * members' time to first token under each {@link BatcherConfig.PrefillOrder}, alternating
 * the orders over the rounds, medians.
 */
public final class BatchBench {

    /** One order's medians. */
    public record Row(String order, double shortTtftMs, double longTtftMs, double decodeTokensPerSecond) {
        public Map<String, Object> toJson() {
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("order", order);
            out.put("short_ttft_ms", shortTtftMs);
            out.put("long_ttft_ms", longTtftMs);
            out.put("decode_tokens_per_s", decodeTokensPerSecond);
            return out;
        }
    }

    private BatchBench() {}

    public static List<Row> run(Path model, int cores, int decoders, int shorts, int longPrompt, int tokenBudget,
            int rounds) throws InterruptedException {
        BatcherConfig.PrefillOrder[] orders = BatcherConfig.PrefillOrder.values();
        double[][] shortTtft = new double[orders.length][rounds];
        double[][] longTtft = new double[orders.length][rounds];
        double[][] decode = new double[orders.length][rounds];
        try (Worker worker = Worker.create(CpuDeviceConfig.withCores(cores))) {
            LanguageModel m = LanguageModel.load(worker, model, Math.max(1024, longPrompt + 256));
            int[] shortTokens = m.encode("Once upon a time");
            int[] longTokens = new int[longPrompt];
            int[] text = m.encode("Lily and Ben went to the park. They played with a ball and ran on the grass.");
            for (int i = 0; i < longPrompt; i++) {
                longTokens[i] = text[i % text.length];
            }
            for (int r = -1; r < rounds; r++) { // round -1 warms up
                for (int k = 0; k < orders.length; k++) {
                    int o = (k + Math.max(r, 0)) % orders.length;
                    BatcherConfig config = BatcherConfig.builder().maxBatch(decoders + shorts + 1)
                            .tokenBudget(tokenBudget).prefill(orders[o]).build();
                    try (Batcher batcher = Batcher.start(worker, m, config)) {
                        GenerateOptions longRun = GenerateOptions.defaults().withMaxTokens(400).withIgnoreEos(true);
                        List<Completion> running = new ArrayList<>();
                        for (int i = 0; i < decoders; i++) {
                            running.add(batcher.submit(shortTokens, longRun, null));
                        }
                        List<Thread> readers = new ArrayList<>();
                        for (Completion c : running) {
                            readers.add(Thread.ofVirtual().start(c::await));
                        }
                        for (Completion c : running) {
                            c.stream().iterator().hasNext(); // wait until all are decoding
                        }
                        long before = batcher.stats().tokens();
                        long t0 = System.nanoTime();
                        GenerateOptions one = GenerateOptions.defaults().withMaxTokens(2).withIgnoreEos(true);
                        Completion longMember = batcher.submit(longTokens, one, null);
                        List<Completion> shortMembers = new ArrayList<>();
                        for (int i = 0; i < shorts; i++) {
                            shortMembers.add(batcher.submit(shortTokens, one, null));
                        }
                        double[] ttft = new double[shorts];
                        for (int i = 0; i < shorts; i++) {
                            shortMembers.get(i).await();
                            ttft[i] = shortMembers.get(i).outcome().timeToFirstToken().toNanos() / 1e6;
                        }
                        longMember.await();
                        double seconds = (System.nanoTime() - t0) / 1e9;
                        long decoded = batcher.stats().tokens() - before - 2L * (shorts + 1);
                        for (Completion c : running) {
                            c.cancel();
                        }
                        for (Thread t : readers) {
                            t.join();
                        }
                        if (r >= 0) {
                            Arrays.sort(ttft);
                            shortTtft[o][r] = ttft[ttft.length / 2];
                            longTtft[o][r] = longMember.outcome().timeToFirstToken().toNanos() / 1e6;
                            decode[o][r] = decoded / seconds;
                        }
                    }
                }
            }
        }
        List<Row> rows = new ArrayList<>();
        for (int o = 0; o < orders.length; o++) {
            rows.add(new Row(orders[o].name(), Stats.median(shortTtft[o]), Stats.median(longTtft[o]),
                    Stats.median(decode[o])));
        }
        return rows;
    }
}
