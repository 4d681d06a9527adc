package dev.tandem.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Map;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/** {@code tandem bench}: its subcommands, each a class of its own file, each with working help. */
class BenchCommandTest {

    @Test
    void benchListsItsNineSubcommandsEachATopLevelClass() {
        Map<String, CommandLine> subcommands = new CommandLine(new Main()).getSubcommands().get("bench").getSubcommands();
        assertThat(subcommands).containsOnlyKeys("overhead", "pipeline", "requests", "decode", "serve", "batch",
                "kernels", "first-run", "grammar");
        subcommands.forEach((name, line) -> assertThat(line.getCommand().getClass().getEnclosingClass())
                .as("bench %s is a class of its own file", name).isNull());
    }

    @Test
    void everySubcommandPrintsItsHelp() {
        for (String name : new CommandLine(new Main()).getSubcommands().get("bench").getSubcommands().keySet()) {
            CliRun.Run run = CliRun.execute("bench", name, "--help");
            assertThat(run.exitCode()).as("bench %s --help: %s", name, run.err()).isZero();
            assertThat(run.out()).as(name).contains("Usage: tandem bench " + name).contains("--json");
        }
    }
}
