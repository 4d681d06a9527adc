package dev.tandem.llm.tokenizer;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Encoding 10 KB takes milliseconds: mixed text, and one 10 KB word (the merge queue keeps a long
 * word O(n log n)): about 20-40 ms and 6-26 ms here. The bound is loose for a shared 2-core machine.
 */
class SpeedTest {
    private static final int SIZE = 10 * 1024;
    private static final long BOUND_MS = 500;

    @ParameterizedTest
    @ValueSource(strings = {"ggml-vocab-llama-spm", "ggml-vocab-llama-bpe", "ggml-vocab-gpt-2"})
    void encodesTenKilobytesInMilliseconds(String name) throws IOException {
        Tokenizer tokenizer = VectorsTest.tokenizer(name);
        String inp = Files.readString(SharedModels.file("vocab/" + name + ".gguf.inp"), StandardCharsets.UTF_8)
                .replace("\n__ggml_vocab_test__\n", " ");
        StringBuilder mixed = new StringBuilder();
        while (mixed.toString().getBytes(StandardCharsets.UTF_8).length < SIZE) {
            mixed.append(inp);
        }
        String oneWord = "ab".repeat(SIZE / 2);
        for (String text : new String[] {mixed.toString(), oneWord}) {
            for (int warm = 0; warm < 5; warm++) {
                tokenizer.encode(text, true, true);
            }
            long best = Long.MAX_VALUE;
            int[] ids = null;
            for (int run = 0; run < 5; run++) {
                long t0 = System.nanoTime();
                ids = tokenizer.encode(text, true, true);
                best = Math.min(best, System.nanoTime() - t0);
            }
            double ms = best / 1e6;
            assertThat(ms).as("%s: %.2f ms for %d chars, %d tokens", name, ms, text.length(), ids.length)
                    .isLessThan(BOUND_MS);
        }
    }
}
