package dev.tandem.kernels;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import org.junit.jupiter.api.Test;

/**
 * The kernels are a leaf: the JDK (its Vector API, and JMX for {@code InlineDirectives}' one
 * diagnostic command) and SLF4J only, nothing of the runtime above them.
 */
class ArchitectureTest {
    private static final JavaClasses KERNELS = new ClassFileImporter()
            .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
            .importPackages("dev.tandem.kernels");

    @Test
    void dependOnTheJdkOnly() {
        noClasses().should().dependOnClassesThat()
                .resideOutsideOfPackages("dev.tandem.kernels..", "java..", "javax.management..", "jdk.incubator.vector..",
                        "jdk.internal..", "org.slf4j..")
                .check(KERNELS);
    }

    /**
     * Only {@code dev.tandem.kernels.vector} names the Vector API, and nothing outside it names that
     * package but {@link Ops}, on the branch where the module is present: without
     * {@code jdk.incubator.vector} the module runs on the rest alone.
     */
    @Test
    void onlyTheVectorPackageNamesTheVectorApi() {
        noClasses().that().resideOutsideOfPackage("dev.tandem.kernels.vector..")
                .should().dependOnClassesThat().resideInAPackage("jdk.incubator.vector..")
                .check(KERNELS);
        noClasses().that().resideOutsideOfPackage("dev.tandem.kernels.vector..")
                .and().doNotHaveFullyQualifiedName("dev.tandem.kernels.Ops$Preferred")
                .should().dependOnClassesThat().resideInAPackage("dev.tandem.kernels.vector..")
                .check(KERNELS);
    }

    @Test
    void neverPrint() {
        noClasses().should().accessField(System.class, "out").orShould().accessField(System.class, "err")
                .check(KERNELS);
    }
}
