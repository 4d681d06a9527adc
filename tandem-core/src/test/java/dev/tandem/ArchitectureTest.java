package dev.tandem;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import org.junit.jupiter.api.Test;

/** Structural rules: the public API stays free of implementation types, and core depends on the JDK only. */
class ArchitectureTest {
    private static final JavaClasses CORE = new ClassFileImporter()
            .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
            .importPackages("dev.tandem");

    @Test
    void coreDependsOnTheJdkAndSlf4jOnly() {
        noClasses().should().dependOnClassesThat()
                .resideOutsideOfPackages("dev.tandem..", "java..", "javax..", "jdk.internal..", "jdk.jfr..",
                        "com.sun.management..", "org.slf4j..") // com.sun.management: the JDK's jdk.management module
                .check(CORE);
    }

    @Test
    void implementationPackagesDoNotPrint() {
        noClasses().should().accessField(System.class, "out").orShould().accessField(System.class, "err").check(CORE);
    }

    @Test
    void graphDoesNotDependOnSessions() {
        noClasses().that().resideInAPackage("dev.tandem.graph..")
                .should().dependOnClassesThat().resideInAPackage("dev.tandem.session..")
                .check(CORE);
    }

    /** The layers inside the core: device ← graph ← session ← the API's Worker; trace beside them. */
    @Test
    void theDeviceKnowsNothingOfGraphsRequestsOrSessions() {
        noClasses().that().resideInAPackage("dev.tandem.device..")
                .should().dependOnClassesThat().resideInAnyPackage("dev.tandem.graph..", "dev.tandem.session..")
                .check(CORE);
    }

    @Test
    void traceIsALeafBesideTheRuntime() {
        noClasses().that().resideInAPackage("dev.tandem.trace..")
                .should().dependOnClassesThat()
                .resideInAnyPackage("dev.tandem.device..", "dev.tandem.graph..", "dev.tandem.session..")
                .check(CORE);
    }

    /** Above the device, code sees the Device interface and the task types, never the CPU device's classes. */
    @Test
    void onlyTheDevicePackageUsesTheCpuDevicesClasses() {
        noClasses().that().resideOutsideOfPackage("dev.tandem.device")
                .should().dependOnClassesThat().haveFullyQualifiedName("dev.tandem.device.CpuCores")
                .orShould().dependOnClassesThat().haveFullyQualifiedName("dev.tandem.device.CoreContext")
                .orShould().dependOnClassesThat().haveFullyQualifiedName("dev.tandem.device.ReadyQueue")
                .check(CORE);
    }

    /** The API's interfaces are what a kernel sees; nothing casts a TaskContext to the device's own. */
    @Test
    void theDevicesImplementationClassesArePackagePrivate() {
        com.tngtech.archunit.lang.syntax.ArchRuleDefinition.classes()
                .that().haveFullyQualifiedName("dev.tandem.device.CpuCores")
                .or().haveFullyQualifiedName("dev.tandem.device.CoreContext")
                .or().haveFullyQualifiedName("dev.tandem.device.ReadyQueue")
                .should().notBePublic()
                .check(CORE);
    }

    @Test
    void publicApiSignaturesExposeNoImplementationTypes() {
        // Classes of dev.tandem may use implementation classes internally (Worker wires them),
        // but no public method of the API may take or return one.
        com.tngtech.archunit.lang.syntax.ArchRuleDefinition.methods()
                .that().areDeclaredInClassesThat().resideInAPackage("dev.tandem")
                .and().areDeclaredInClassesThat().arePublic()
                .and().arePublic()
                .should(new com.tngtech.archunit.lang.ArchCondition<com.tngtech.archunit.core.domain.JavaMethod>(
                        "not mention implementation types in their signature") {
                    @Override
                    public void check(com.tngtech.archunit.core.domain.JavaMethod method,
                            com.tngtech.archunit.lang.ConditionEvents events) {
                        var types = new java.util.ArrayList<com.tngtech.archunit.core.domain.JavaClass>();
                        types.add(method.getRawReturnType());
                        types.addAll(method.getRawParameterTypes());
                        for (var type : types) {
                            String pkg = type.getPackageName();
                            if (pkg.startsWith("dev.tandem.") ) {
                                events.add(com.tngtech.archunit.lang.SimpleConditionEvent.violated(method,
                                        method.getFullName() + " exposes " + type.getName()));
                            }
                        }
                    }
                })
                .check(CORE);
    }
}
