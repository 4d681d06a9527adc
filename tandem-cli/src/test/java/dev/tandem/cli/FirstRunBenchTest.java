package dev.tandem.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

class FirstRunBenchTest {

    @Test
    void childrenKeepTheJvmFlagsButNoCacheLogOrRecording() {
        assertThat(FirstRunBench.inherited("--add-modules=jdk.incubator.vector")).isTrue();
        assertThat(FirstRunBench.inherited("--enable-native-access=ALL-UNNAMED")).isTrue();
        assertThat(FirstRunBench.inherited("-XX:+UseParallelGC")).isTrue();
        assertThat(FirstRunBench.inherited("-Xmx2g")).isTrue();
        assertThat(FirstRunBench.inherited("-XX:AOTCache=tandem-cli/target/tandem.aot")).isFalse();
        assertThat(FirstRunBench.inherited("-XX:AOTCacheOutput=x.aot")).isFalse();
        assertThat(FirstRunBench.inherited("-XX:AOTMode=on")).isFalse();
        assertThat(FirstRunBench.inherited("-XX:SharedArchiveFile=app.jsa")).isFalse();
        assertThat(FirstRunBench.inherited("-Xshare:off")).isFalse();
        assertThat(FirstRunBench.inherited("-Xlog:disable")).isFalse();
        assertThat(FirstRunBench.inherited("-XX:StartFlightRecording=filename=x.jfr")).isFalse();
        assertThat(FirstRunBench.inherited("-javaagent:agent.jar")).isFalse();
    }

    @Test
    void theFigureIsTheDemosOverallLine() {
        String output = "tandem demo: 4 requests x 96 tokens\n\nrequest  status\n6 COMPLETED 96 35.46 4.092 9.055 224.0\n"
                + "overall: 384 tokens in 445.8 ms = 861.3 tokens/s\noverlap in a 1317.2 ms run: ...\n";
        assertThat(FirstRunBench.overallTokensPerSecond(output)).isEqualTo(861.3);
    }

    @Test
    void aChildWithoutAnOverallLineFailsWithWhatItPrinted() {
        assertThatThrownBy(() -> FirstRunBench.overallTokensPerSecond("Error: Could not find or load main class x\n"))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("no overall line")
                .hasMessageContaining("Could not find or load main class x");
    }

    @Test
    void theWarmRunReturnsTheFigureItPrints() {
        DemoCommand demo = picocli.CommandLine.populateCommand(new DemoCommand(), "--requests", "1", "--tokens", "4");
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        double figure = demo.run(new PrintStream(bytes, true, StandardCharsets.UTF_8));
        String printed = bytes.toString(StandardCharsets.UTF_8);
        assertThat(figure).isPositive();
        assertThat(FirstRunBench.overallTokensPerSecond(printed))
                .isCloseTo(figure, org.assertj.core.data.Offset.offset(0.05 + figure * 1e-3));
    }

    @Test
    void badRoundsAreOneLineAndExitTwo() {
        CliRun.Run run = CliRun.execute("bench", "first-run", "--rounds", "0");
        assertThat(run.exitCode()).as("stderr: %s", run.err()).isEqualTo(2);
        assertThat(run.err().strip()).isEqualTo(
                "tandem: --rounds, --requests and --tokens must be >= 1 (were rounds=0, requests=4, tokens=96)");
        assertThat(run.out()).isEmpty();
    }
}
