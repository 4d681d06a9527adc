package dev.tandem.llm;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.module.ModuleDescriptor;
import java.lang.module.ModuleFinder;
import java.nio.file.Path;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/** The engine as a named module: what it exports, and that it reads tandem only through exported packages. */
class ModuleBoundaryTest {

    @Test
    void theDescriptorExportsThePublicPackagesAndReadsTheCoreAndKernelsAsModules() throws Exception {
        Path classes = Path.of(LanguageModel.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        ModuleDescriptor descriptor = ModuleFinder.of(classes).find("dev.tandem.llm").orElseThrow().descriptor();
        assertThat(descriptor.exports().stream().map(ModuleDescriptor.Exports::source).collect(Collectors.toSet()))
                .isEqualTo(Set.of("dev.tandem.llm", "dev.tandem.llm.chat", "dev.tandem.llm.gguf",
                        "dev.tandem.llm.grammar", "dev.tandem.llm.safetensors", "dev.tandem.llm.sampling", "dev.tandem.llm.tokenizer"));
        assertThat(descriptor.exports()).noneMatch(ModuleDescriptor.Exports::isQualified);
        assertThat(descriptor.requires().stream().map(ModuleDescriptor.Requires::name))
                .contains("dev.tandem.core", "dev.tandem.kernels");
        // Not exported: the engine's rooms (behind Batcher) and the embedded model's file (a resource).
        assertThat(descriptor.packages()).containsExactlyInAnyOrder("dev.tandem.llm", "dev.tandem.llm.chat",
                "dev.tandem.llm.gguf", "dev.tandem.llm.grammar", "dev.tandem.llm.safetensors", "dev.tandem.llm.sampling",
                "dev.tandem.llm.tokenizer", "dev.tandem.llm.models", "dev.tandem.llm.engine");
    }
}
