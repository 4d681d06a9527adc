/**
 * The LLM engine on tandem's public API: the Llama-family decoder and its continuous batcher,
 * checkpoints (GGUF, safetensors), tokenizers, chat templates, sampling and text.
 *
 * <p>It reads the core only through {@code dev.tandem} and the kernels through
 * {@code dev.tandem.kernels}, both re-exported because its API names their types
 * ({@code Worker}, {@code TokenStream}, {@code KernelOps}). Jinjava, which has no module name of
 * its own, is read as the automatic module {@code jinjava}.
 */
module dev.tandem.llm {
    requires transitive dev.tandem.core;
    requires transitive dev.tandem.kernels;
    requires org.slf4j;
    requires com.fasterxml.jackson.databind;
    requires jinjava;
    requires java.desktop; // java.beans.FeatureDescriptor, in the EL resolver API that chat templates implement

    exports dev.tandem.llm;
    exports dev.tandem.llm.chat;
    exports dev.tandem.llm.gguf;
    exports dev.tandem.llm.grammar;
    // The decoder's insides, for the plain-program server engine, the benches and the CLI's tools;
    // an embedder goes through LanguageModel and Batcher.
    exports dev.tandem.llm.model to dev.tandem.server, dev.tandem.bench, dev.tandem.cli;
    // Random weights, the reference decoder and sampler, demo workloads and the GGUF and safetensors
    // writers: what benches, the demo and the tests build and compare against.
    exports dev.tandem.llm.reference to dev.tandem.bench, dev.tandem.cli;
    exports dev.tandem.llm.safetensors;
    exports dev.tandem.llm.sampling;
    exports dev.tandem.llm.tokenizer;
}
