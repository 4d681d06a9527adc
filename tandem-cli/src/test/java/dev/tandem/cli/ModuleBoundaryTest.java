package dev.tandem.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.module.ModuleDescriptor;
import java.lang.module.ModuleFinder;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/** The command as a named module: it exports nothing and opens its package to picocli alone. */
class ModuleBoundaryTest {

    @Test
    void theDescriptorExportsNothingAndOpensOnlyToPicocli() throws Exception {
        Path classes = Path.of(Main.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        ModuleDescriptor descriptor = ModuleFinder.of(classes).find("dev.tandem.cli").orElseThrow().descriptor();
        assertThat(descriptor.exports()).isEmpty();
        assertThat(descriptor.opens()).singleElement().satisfies(o -> {
            assertThat(o.source()).isEqualTo("dev.tandem.cli");
            assertThat(o.targets()).containsExactly("info.picocli");
        });
        assertThat(descriptor.requires()).anySatisfy(r -> assertThat(r.name()).isEqualTo("dev.tandem.bench"));
    }
}
