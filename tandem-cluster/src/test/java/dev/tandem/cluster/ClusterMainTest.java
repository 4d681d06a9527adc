package dev.tandem.cluster;

import static org.assertj.core.api.Assertions.assertThat;

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
}
