package dev.tandem.bench;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.module.ModuleDescriptor;
import java.lang.module.ModuleFinder;
import java.nio.file.Path;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/** The benchmarks as a named module: they export their three packages and read the server as a module. */
class ModuleBoundaryTest {

    @Test
    void theDescriptorExportsTheBenchPackagesUnqualified() throws Exception {
        Path classes = Path.of(DecodeBench.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        ModuleDescriptor descriptor = ModuleFinder.of(classes).find("dev.tandem.bench").orElseThrow().descriptor();
        Set<String> exports = descriptor.exports().stream().map(e -> {
            assertThat(e.isQualified()).as(e.source()).isFalse();
            return e.source();
        }).collect(Collectors.toSet());
        assertThat(exports).containsExactlyInAnyOrder("dev.tandem.bench", "dev.tandem.bench.peers",
                "dev.tandem.bench.trace");
        assertThat(descriptor.requires()).anySatisfy(r -> {
            assertThat(r.name()).isEqualTo("dev.tandem.server");
            assertThat(r.modifiers()).contains(ModuleDescriptor.Requires.Modifier.TRANSITIVE);
        });
    }
}
