package dev.tandem.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tandem.llm.model.KvType;
import java.io.PrintWriter;
import java.io.StringWriter;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/** Bad command lines fail before anything starts, with a message naming what is wrong. */
class ClusterMainTest {

    private static String run(String... args) {
        StringWriter err = new StringWriter();
        CommandLine cli = new CommandLine(new ClusterMain());
        cli.setErr(new PrintWriter(err, true));
        cli.setExecutionExceptionHandler((e, line, parsed) -> {
            line.getErr().println("tandem cluster: " + e.getMessage());
            return 2;
        });
        int code = cli.execute(args);
        assertThat(code).as("exit code of %s", String.join(" ", args)).isNotZero();
        return err.toString();
    }

    @Test
    void anUnknownRoleIsNamed() {
        assertThat(run("--role", "leader", "--cluster-port", "25520")).contains("'leader' is not a role");
    }

    @Test
    void theRoleAndTheClusterPortAreRequired() {
        assertThat(run("--cluster-port", "25520")).contains("--role");
        assertThat(run("--role", "worker")).contains("--cluster-port");
    }

    @Test
    void aSeedThatIsNotHostColonPortIsNamed() {
        assertThat(run("--role", "worker", "--cluster-port", "25521", "--join", "127.0.0.1"))
                .contains("a seed node is HOST:PORT, was '127.0.0.1'");
        assertThat(run("--role", "worker", "--cluster-port", "25521", "--join", "127.0.0.1:25520,host:x"))
                .contains("port not a number");
        assertThat(run("--role", "worker", "--cluster-port", "25521", "--join", "127.0.0.1:70000"))
                .contains("outside [1, 65535]");
    }

    @Test
    void outOfRangeNumbersAreNamed() {
        assertThat(run("--role", "gateway", "--cluster-port", "70000")).contains("cluster port must be in [0, 65535]");
        assertThat(run("--role", "worker", "--cluster-port", "25521", "--heartbeat-pause-ms", "0"))
                .contains("must be positive");
        assertThat(run("--role", "worker", "--cluster-port", "25521", "--drain-seconds", "-1"))
                .contains("--drain-seconds must be >= 0");
    }

    @Test
    void aWorkersCacheOptionsAreCheckedAsServesAre() {
        assertThat(run("--role", "worker", "--cluster-port", "25521", "--kv-type", "q8_0"))
                .contains("expected one of f16, f32 but was 'q8_0'");
        assertThat(run("--role", "worker", "--cluster-port", "25521", "--kv-cells", "-1"))
                .contains("--ctx-size and --kv-cells must be >= 0, were 0 and -1");
        assertThat(run("--role", "worker", "--cluster-port", "25521", "-c", "-5"))
                .contains("--ctx-size and --kv-cells must be >= 0, were -5 and 0");
        assertThat(run("--role", "worker", "--cluster-port", "25521", "-b", "8"))
                .contains("--batch-size 8, --max-batch 8 and --prompt-rows 64: tokenBudget = 8 must exceed maxBatch = 8");
    }

    @Test
    void theSizingOptionsReachTheNodesOptions() {
        ClusterMain main = CommandLine.populateCommand(new ClusterMain(), "--role", "worker", "--cluster-port", "25521",
                "--ctx-size", "256", "--kv-cells", "1000", "--kv-type", "F32", "--no-prefix-cache", "--batch-size", "48",
                "--prompt-rows", "24");
        ClusterNode.Options options = main.options();
        assertThat(options.sizing()).isEqualTo(new ClusterNode.ModelSizing(256, 1000, KvType.F32));
        assertThat(options.batcher().prefixCache()).isFalse();
        assertThat(options.batcher().tokenBudget()).isEqualTo(48);
        assertThat(options.batcher().promptRows()).isEqualTo(24);
        ClusterNode.Options defaults = CommandLine.populateCommand(new ClusterMain(), "--role", "worker",
                "--cluster-port", "25521").options();
        assertThat(defaults.sizing()).isEqualTo(ClusterNode.ModelSizing.DEFAULTS);
        assertThat(defaults.batcher().prefixCache()).isTrue();
        assertThat(defaults.batcher().promptRows()).isEqualTo(64);
    }
}
