package dev.tandem.cluster;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import org.junit.jupiter.api.Test;

/**
 * Layering: the cluster reaches the core through its public API only, the LLM engine through its
 * public packages only, Pekko through its Java APIs (no {@code scaladsl}), and prints only from
 * its command.
 */
class ArchitectureTest {
    private static final JavaClasses CLUSTER = new ClassFileImporter()
            .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
            .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_JARS)
            .importPackages("dev.tandem.cluster");

    @Test
    void usesOnlyThePublicApiOfTheCoreAndTheLlm() {
        noClasses().should().dependOnClassesThat().resideInAnyPackage("dev.tandem.graph..", "dev.tandem.device..",
                "dev.tandem.session..", "dev.tandem.trace..", "dev.tandem.llm.gguf..", "dev.tandem.llm.safetensors..",
                "dev.tandem.kernels..").check(CLUSTER);
    }

    @Test
    void usesPekkosJavaApisOnly() {
        noClasses().should().dependOnClassesThat().resideInAnyPackage("org.apache.pekko..scaladsl..")
                .check(CLUSTER);
    }

    @Test
    void printsOnlyFromItsCommand() {
        noClasses().that().doNotHaveSimpleName("ClusterMain").should().accessField(System.class, "out")
                .orShould().accessField(System.class, "err").check(CLUSTER);
    }

    @Test
    void doesNotDependOnTheCliOrTheBenchmarks() {
        noClasses().should().dependOnClassesThat().resideInAnyPackage("dev.tandem.cli..", "dev.tandem.bench..")
                .check(CLUSTER);
    }
}
