package dev.tandem.server;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import org.junit.jupiter.api.Test;

/**
 * Layering: the server reaches the core through its public API ({@code dev.tandem}) only, the
 * LLM engine through its public packages only (not its loaders), never the kernels, and never
 * prints.
 */
class ArchitectureTest {
    private static final JavaClasses SERVER = new ClassFileImporter()
            .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
            .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_JARS) // the module's own classes; no scan of ~120 jars
            .importPackages("dev.tandem.server");

    @Test
    void usesOnlyThePublicApiOfTheCore() {
        noClasses().should().dependOnClassesThat().resideInAnyPackage("dev.tandem.graph..", "dev.tandem.device..",
                "dev.tandem.session..", "dev.tandem.trace..")
                .check(SERVER);
    }

    @Test
    void usesThePublicPackagesOfTheLlmOnly() {
        noClasses().should().dependOnClassesThat().resideInAnyPackage("dev.tandem.llm.gguf..",
                "dev.tandem.llm.safetensors..", "dev.tandem.llm.checkpoint..", "dev.tandem.llm.reference..",
                "dev.tandem.kernels..", "jdk.incubator.vector..")
                .check(SERVER);
    }

    @Test
    void neverPrints() {
        noClasses().should().accessField(System.class, "out").orShould().accessField(System.class, "err")
                .check(SERVER);
    }

    @Test
    void doesNotDependOnTheCliOrTheBenchmarks() {
        noClasses().should().dependOnClassesThat().resideInAnyPackage("dev.tandem.cli..", "dev.tandem.bench..")
                .check(SERVER);
    }
}
