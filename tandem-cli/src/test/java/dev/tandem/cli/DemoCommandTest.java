package dev.tandem.cli;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class DemoCommandTest {

    private static CliRun.Run execute(String... args) {
        return CliRun.execute(args);
    }

    private static void assertBadInput(CliRun.Run run, String message) {
        assertThat(run.exitCode()).as("exit code; stderr: %s", run.err()).isEqualTo(2);
        assertThat(run.err().strip()).isEqualTo("tandem: " + message);
        assertThat(run.out()).as("nothing presented as a result").isEmpty();
    }

    @Test
    void unknownWorkloadIsOneLineAndExitTwo() {
        assertBadInput(execute("demo", "--workload", "bert"),
                "workload = bert is not known; known: llama, paged-attention");
    }

    @Test
    void unknownModelIsOneLineAndExitTwo() {
        assertBadInput(execute("demo", "--model", "huge"),
                "model = huge is neither a GGUF file, a model directory nor a known name; known: stories260K, tiny, small");
        assertBadInput(execute("demo", "--workload", "paged-attention", "--model", "huge"),
                "model = huge is not a known shape; known: tiny, small");
        assertBadInput(execute("bench", "decode", "--model", "huge"),
                "model = huge is not a known shape; known: tiny, small");
        assertBadInput(execute("bench", "decode", "--model", "small", "--trace", "x.trace"),
                "bench decode --trace needs --model PATH.gguf (or stories260K): it traces warm batch-1 requests on"
                        + " that file");
    }

    @Test
    void kernelBenchOnATinyMatrixPrintsEveryKernelAndJson() {
        assertBadInput(execute("bench", "kernels", "--mb", "0"), "--mb must be >= 1, was 0");
        CliRun.Run run = execute("bench", "kernels", "--mb", "1", "--quick", "--json");
        assertThat(run.exitCode()).as("stdout: %s%nstderr: %s", run.out(), run.err()).isZero();
        assertThat(run.out()).contains("machine, 1 thread(s): a plain read").contains("q8_0_x16 ").contains("f32_x16 ");
        assertThat(run.out().lines().reduce((a, b) -> b).orElseThrow())
                .startsWith("{\"ops\":")
                .contains("\"read_bandwidth\"", "\"kernel\":\"q8_0_x16\"", "\"batch\":8", "\"fraction_of_read\"");
    }

    @Test
    void tokensPastTheContextAreOneLineAndExitTwo() {
        // tiny has a context of 256 positions; the first prompt, "Once upon a time" after BOS, takes 17.
        assertBadInput(execute("demo", "--model", "tiny", "--tokens", "250"),
                "maxTokens = 250 must be <= contextLength - prompt length = 239");
    }

    @Test
    void nonPositiveCountsAreOneLineAndExitTwo() {
        assertBadInput(execute("demo", "--requests", "0"),
                "--requests and --tokens must be >= 1 and --cores >= 0 (was requests=0, tokens=96, cores=0)");
    }

    @Test
    void aKvTypeForThePagedAttentionWorkloadIsOneLineAndExitTwo() {
        assertBadInput(execute("demo", "--workload", "paged-attention", "--kv-type", "f16"),
                "--kv-type is the llama workload's: paged-attention runs its own f32 cache");
    }

    /** With the default f16 cache and with an f32 one: the reference keeps its keys and values as the model does. */
    @ParameterizedTest
    @ValueSource(strings = {"f16", "f32"})
    void checkedLlamaDemoOnTheTinyModelExitsZeroInAPlainPipe(String kvType) {
        CliRun.Run run = execute("demo", "--model", "tiny", "--requests", "2", "--tokens", "12", "--cores", "2", "--check",
                "--kv-type", kvType);
        assertThat(run.exitCode()).as("stdout: %s%nstderr: %s", run.out(), run.err()).isZero();
        assertThat(run.out()).contains("check: 2 of 2 streams equal the reference").doesNotContain("\033[");
        assertThat(run.out().lines().filter(line -> line.startsWith("r1 ") || line.startsWith("r2 "))).hasSize(2);
    }

    @Test
    void checkedPagedAttentionDemoExitsZero() {
        // Without --model, as the README offers it: the workload picks its shape (the default model is a checkpoint).
        CliRun.Run run = execute("demo", "--workload", "paged-attention", "--requests", "2", "--tokens", "3",
                "--check");
        assertThat(run.exitCode()).as("stdout: %s%nstderr: %s", run.out(), run.err()).isZero();
        assertThat(run.out()).contains("check: 2 of 2 streams equal the reference");
    }

    @Test
    void theDefaultDemoStreamsStoriesFromTheEmbeddedModelAndChecksThem() {
        CliRun.Run run = execute("demo", "--requests", "3", "--tokens", "40", "--cores", "2", "--check");
        assertThat(run.exitCode()).as("stdout: %s%nstderr: %s", run.out(), run.err()).isZero();
        assertThat(run.out()).contains("stories260K").contains("check: 3 of 3 streams equal the reference");
        // Real English: the lanes hold words of the stories' vocabulary, not bytes.
        assertThat(run.out().lines().filter(line -> line.startsWith("r1 ") || line.startsWith("r2 ")
                || line.startsWith("r3 "))).hasSize(3).allMatch(line -> line.matches(".*\\b(the|a|and|was|to)\\b.*"));
    }
}
