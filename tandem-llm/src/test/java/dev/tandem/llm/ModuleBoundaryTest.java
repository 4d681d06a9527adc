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
        assertThat(descriptor.exports().stream().filter(e -> !e.isQualified()).map(ModuleDescriptor.Exports::source)
                .collect(Collectors.toSet()))
                .isEqualTo(Set.of("dev.tandem.llm", "dev.tandem.llm.chat", "dev.tandem.llm.gguf",
                        "dev.tandem.llm.grammar", "dev.tandem.llm.safetensors", "dev.tandem.llm.sampling", "dev.tandem.llm.tokenizer"));
        // The decoder's insides and the reference decoders reach only tandem's own modules.
        assertThat(descriptor.exports().stream().filter(ModuleDescriptor.Exports::isQualified)
                .collect(Collectors.toMap(ModuleDescriptor.Exports::source, ModuleDescriptor.Exports::targets)))
                .isEqualTo(java.util.Map.of(
                        "dev.tandem.llm.model", Set.of("dev.tandem.server", "dev.tandem.bench", "dev.tandem.cli"),
                        "dev.tandem.llm.reference", Set.of("dev.tandem.bench", "dev.tandem.cli")));
        assertThat(descriptor.requires().stream().map(ModuleDescriptor.Requires::name))
                .contains("dev.tandem.core", "dev.tandem.kernels");
        // Not exported: the engine's rooms (behind Batcher), the checkpoint readers' mapped file and
        // the embedded model's file (a resource).
        assertThat(descriptor.packages()).containsExactlyInAnyOrder("dev.tandem.llm", "dev.tandem.llm.chat",
                "dev.tandem.llm.gguf", "dev.tandem.llm.grammar", "dev.tandem.llm.safetensors", "dev.tandem.llm.sampling",
                "dev.tandem.llm.tokenizer", "dev.tandem.llm.models", "dev.tandem.llm.engine", "dev.tandem.llm.model",
                "dev.tandem.llm.reference", "dev.tandem.llm.checkpoint");
    }
}
