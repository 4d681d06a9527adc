package dev.tandem.server;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.module.ModuleDescriptor;
import java.lang.module.ModuleFinder;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/** The server as a named module: it exports its one package and reads the engine as a module. */
class ModuleBoundaryTest {

    @Test
    void theDescriptorExportsTheServerPackageOnly() throws Exception {
        Path classes = Path.of(TandemServer.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        ModuleDescriptor descriptor = ModuleFinder.of(classes).find("dev.tandem.server").orElseThrow().descriptor();
        assertThat(descriptor.exports()).singleElement().satisfies(e -> {
            assertThat(e.source()).isEqualTo("dev.tandem.server");
            assertThat(e.isQualified()).isFalse();
        });
        assertThat(descriptor.requires()).anySatisfy(r -> {
            assertThat(r.name()).isEqualTo("dev.tandem.llm");
            assertThat(r.modifiers()).contains(ModuleDescriptor.Requires.Modifier.TRANSITIVE);
        });
    }
}
