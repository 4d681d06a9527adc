package dev.tandem.llm;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import org.junit.jupiter.api.Test;

/** The programs use the core's public API and the kernels only, name no Vector API class, and never print. */
class ArchitectureTest {
    private static final JavaClasses LLM = new ClassFileImporter()
            .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
            .importPackages("dev.tandem.llm");

    @Test
    void usesOnlyThePublicApiOfTheCore() {
        // Any package below dev.tandem that is not a module of ours is one of the core's
        // implementation packages (device, graph, session, trace, and whatever comes next).
        noClasses().should().dependOnClassesThat(
                        com.tngtech.archunit.core.domain.JavaClass.Predicates.resideInAPackage("dev.tandem.*..")
                                .and(com.tngtech.archunit.core.domain.JavaClass.Predicates.resideOutsideOfPackages("dev.tandem.llm..", "dev.tandem.kernels..")))
                .orShould().dependOnClassesThat().resideInAPackage("jdk.incubator.vector..")
                .check(LLM);
    }

    @Test
    void theEngineKnowsNoModelNorFacade() {
        // The engine's rooms see the model through ForwardPass only, and the facade (Batcher) not at
        // all: the arrow goes dev.tandem.llm -> engine, never back.
        noClasses().that().resideInAPackage("dev.tandem.llm.engine..")
                .should().dependOnClassesThat().resideInAnyPackage("dev.tandem.llm", "dev.tandem.llm.model..",
                        "dev.tandem.llm.reference..", "dev.tandem.llm.gguf..",
                        "dev.tandem.llm.safetensors..", "dev.tandem.llm.chat..", "dev.tandem.llm.tokenizer..")
                .check(LLM);
    }

    @Test
    void theModelKnowsNoFacadeNorReference() {
        // The decoder is built and driven from above: the facade (LanguageModel, Batcher) and the
        // reference decoders use it, never the other way round; the checkpoint readers build its
        // configuration and weights.
        noClasses().that().resideInAPackage("dev.tandem.llm.model..")
                .should().dependOnClassesThat().resideInAnyPackage("dev.tandem.llm", "dev.tandem.llm.reference..",
                        "dev.tandem.llm.gguf..", "dev.tandem.llm.safetensors..", "dev.tandem.llm.chat..",
                        "dev.tandem.llm.tokenizer..")
                .check(LLM);
    }

    @Test
    void theFacadeAndTheLibraryKnowNoReference() {
        // Random weights, the reference decoder and the demo workloads are for benches, tests and the demo.
        noClasses().that().resideOutsideOfPackage("dev.tandem.llm.reference..")
                .should().dependOnClassesThat().resideInAPackage("dev.tandem.llm.reference..")
                .check(LLM);
    }

    @Test
    void packagesAreFreeOfCycles() {
        // Each package a slice, the facade's root package one of them.
        com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices().matching("dev.tandem.(**)")
                .namingSlices("$1").should().beFreeOfCycles().check(LLM);
    }

    @Test
    void neverPrints() {
        noClasses().should().accessField(System.class, "out").orShould().accessField(System.class, "err").check(LLM);
    }
}
