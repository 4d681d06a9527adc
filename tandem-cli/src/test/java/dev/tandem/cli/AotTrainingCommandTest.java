package dev.tandem.cli;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The launcher's training run: the demo, then a served session whose every request must answer
 * 200, or the run fails and the launcher goes on without a cache.
 */
@Timeout(180)
class AotTrainingCommandTest {

    @Test
    void runsTheDemoAndAServedSessionAndExitsZero() {
        CliRun.Run run = CliRun.execute("aot-training");
        assertThat(run.exitCode()).as("stderr: %s", run.err()).isZero();
        assertThat(run.out()).contains("listening on http://127.0.0.1:");
        assertThat(ServeCommand.onStart).isNull();
    }
}
