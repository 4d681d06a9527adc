package dev.tandem;

import static com.tngtech.archunit.base.DescribedPredicate.describe;
import static com.tngtech.archunit.core.domain.JavaClass.Predicates.resideInAPackage;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;

import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import java.util.Set;
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

    /**
     * The API's two facades and the runtime objects they hold in {@code dev.tandem.session}: the
     * one edge from the API package into an implementation package.
     */
    private static final Set<String> FACADES = Set.of("dev.tandem.Worker", "dev.tandem.TokenFeed");
    private static final Set<String> FACADE_TARGETS =
            Set.of("dev.tandem.session.WorkerRuntime", "dev.tandem.session.FeedRun");

    @Test
    void packagesAreFreeOfCyclesButForTheApisFacades() {
        // Each package is a slice, the API package dev.tandem one of them.
        slices().matching("dev.(**)").namingSlices("$1").should().beFreeOfCycles()
                .because("the implementation packages build on the API's types (Status, Token, Kernel, Buffer...),"
                        + " so the one edge back, Worker and TokenFeed holding their runtime objects in session,"
                        + " closes the only cycle (dev.tandem <-> dev.tandem.session); it is inherent to one API"
                        + " package that both names the values and creates the worker, and is ignored by class name"
                        + " so that no other edge can join it")
                .ignoreDependency(
                        describe("the API's facades", (JavaClass c) -> FACADES.contains(outermost(c).getName())),
                        describe("their runtime objects", (JavaClass c) -> FACADE_TARGETS.contains(c.getName())))
                .check(CORE);
    }

    @Test
    void theApiReachesTheImplementationOnlyThroughItsFacades() {
        noClasses().that().resideInAPackage("dev.tandem")
                .and(describe("are not Worker or TokenFeed",
                        (JavaClass c) -> !FACADES.contains(outermost(c).getName())))
                .should().dependOnClassesThat().resideInAPackage("dev.tandem.(*)..")
                .check(CORE);
        noClasses().that().resideInAPackage("dev.tandem")
                .should().dependOnClassesThat(resideInAPackage("dev.tandem.(*)..")
                        .and(describe("are not the facades' runtime objects",
                                (JavaClass c) -> !FACADE_TARGETS.contains(c.getName()))))
                .check(CORE);
    }

    /** The session package's public types are the two the API's facades hold; the rest is package-private. */
    @Test
    void sessionShowsTheApiOnlyWhatItsFacadesHold() {
        com.tngtech.archunit.lang.syntax.ArchRuleDefinition.classes()
                .that().resideInAPackage("dev.tandem.session").and().arePublic()
                .should(com.tngtech.archunit.lang.conditions.ArchConditions.have(
                        describe("a name in " + FACADE_TARGETS, (JavaClass c) -> FACADE_TARGETS.contains(c.getName()))))
                .check(CORE);
    }

    private static JavaClass outermost(JavaClass c) {
        JavaClass outer = c;
        while (outer.getEnclosingClass().isPresent()) {
            outer = outer.getEnclosingClass().get();
        }
        return outer;
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
        // Worker and TokenFeed hold runtime objects of the session package internally,
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
