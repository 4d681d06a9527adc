package dev.tandem.bench;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;

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
            .importPackages("dev.tandem.bench");

    @Test
    void usesOnlyThePublicApiOfTheCore() {
        // Any package below dev.tandem that is not a module of ours is one of the core's
        // implementation packages (device, graph, session, trace, and whatever comes next).
        noClasses().should().dependOnClassesThat(
                        com.tngtech.archunit.core.domain.JavaClass.Predicates.resideInAPackage("dev.tandem.*..")
                                .and(com.tngtech.archunit.core.domain.JavaClass.Predicates.resideOutsideOfPackages("dev.tandem.bench..", "dev.tandem.server..", "dev.tandem.llm..", "dev.tandem.kernels..")))
                .check(CLASSES);
    }

    @Test
    void neverPrints() {
        // The CLI owns stdout; benchmarks return results and log through SLF4J.
        noClasses().should().accessField(System.class, "out").orShould().accessField(System.class, "err")
                .check(CLASSES);
    }

    @Test
    void doesNotDependOnTheCli() {
        noClasses().should().dependOnClassesThat().resideInAPackage("dev.tandem.cli..").check(CLASSES);
    }

    @Test
    void packagesAreFreeOfCycles() {
        // Each package of the module is a slice, dev.tandem.bench itself one of them.
        slices().matching("dev.tandem.(**)").namingSlices("$1").should().beFreeOfCycles().check(CLASSES);
    }
}
