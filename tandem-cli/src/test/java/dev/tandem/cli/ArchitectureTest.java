package dev.tandem.cli;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import org.junit.jupiter.api.Test;

/**
 * Layering: this module reaches the runtime through its public API ({@code dev.tandem}) only,
 * never through the core's implementation packages.
 */
class ArchitectureTest {
    private static final JavaClasses CLASSES = new ClassFileImporter()
            .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
            .importPackages("dev.tandem.cli");

    @Test
    void usesOnlyThePublicApiOfTheCore() {
        noClasses().should().dependOnClassesThat().resideInAnyPackage("dev.tandem.graph..", "dev.tandem.sched..",
                "dev.tandem.cpu..", "dev.tandem.session..", "dev.tandem.memory..", "dev.tandem.trace..")
                .check(CLASSES);
    }
}
