package dev.tandem.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * tandem's greedy tokens equal llama.cpp's, with the tie rule of {@link EquivalenceBench}, for
 * every architecture x type of {@link EquivalenceBench#shapes()} and {@link
 * EquivalenceBench#TYPES}. Opt-in (minutes on 2 cores): {@code -Dtandem.equivalence=true}, and
 * only where the llama.cpp peer is built; otherwise a skip that says why. Narrow it with
 * {@code -Dtandem.equivalence.types=Q4_0,Q6_K} and {@code -Dtandem.equivalence.shapes=gemma2-a}.
 * The table goes to stdout and to {@code target/equivalence.md}.
 */
class LlamaCppEquivalenceTest {

    @Test
    void everyArchitectureAndTypeRunsAsLlamaCppRunsIt() throws IOException {
        assumeTrue(Boolean.getBoolean("tandem.equivalence"), "opt-in: run with -Dtandem.equivalence=true");
        String unavailable = EquivalenceBench.unavailable();
        assumeTrue(unavailable == null, unavailable);
        var shapes = EquivalenceBench.shapes();
        String only = System.getProperty("tandem.equivalence.shapes", "");
        if (!only.isBlank()) {
            shapes.keySet().retainAll(Arrays.asList(only.split(",")));
        }
        String typeList = System.getProperty("tandem.equivalence.types", "");
        List<String> types = typeList.isBlank() ? EquivalenceBench.TYPES : Arrays.asList(typeList.split(","));
        Path dir = Path.of(System.getProperty("java.io.tmpdir"), "tandem-equivalence");
        Files.createDirectories(dir);
        List<EquivalenceBench.Row> rows = EquivalenceBench.runAll(dir, shapes, types, r -> System.out.println(r.line()));
        String table = EquivalenceBench.table(rows);
        System.out.println(table);
        Files.writeString(Path.of("target", "equivalence.md"), table + "\n"
                + String.join("\n", rows.stream().map(EquivalenceBench.Row::line).toList()) + "\n");
        assertThat(rows.stream().filter(r -> !r.ok()).map(EquivalenceBench.Row::line).toList())
                .as("runs that diverge where llama.cpp's top two are more than %s apart", EquivalenceBench.TIE_LOGITS)
                .isEmpty();
    }
}
