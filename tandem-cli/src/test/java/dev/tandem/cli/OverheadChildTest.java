package dev.tandem.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/** {@code bench overhead} measures in a child JVM with a fixed, pre-touched heap and conditional card marks. */
class OverheadChildTest {

    private static BenchOverheadCommand parsed(String... args) {
        BenchOverheadCommand overhead = new BenchOverheadCommand();
        new CommandLine(overhead).parseArgs(args);
        return overhead;
    }

    @Test
    void theChildGetsTheHeapFlagsThisJvmsFlagsAndTheSameArguments() {
        List<String> command = parsed("--tasks", "500", "--seed", "9", "--quick", "--json", "--trace", "t.pftrace")
                .childCommand("/jdk/bin/java", List.of("--add-modules", "jdk.incubator.vector", "-XX:AOTCache=c.aot"),
                        "a.jar:b.jar");
        assertThat(command).containsExactly("/jdk/bin/java", "-Xms2g", "-Xmx2g", "-XX:+AlwaysPreTouch",
                "-XX:+UseCondCardMark", "--add-modules", "jdk.incubator.vector", "-XX:AOTCache=c.aot",
                "-D" + BenchOverheadCommand.CHILD_PROPERTY + "=true", "-cp", "a.jar:b.jar", Main.class.getName(),
                "bench", "overhead", "--tasks", "500", "--seed", "9", "--quick", "--json", "--trace",
                Path.of("t.pftrace").toString());
    }

    @Test
    void aCardMarkFlagOfItsOwnEitherWayIsKeptAndNotAddedTwice() {
        for (String flag : List.of("-XX:+UseCondCardMark", "-XX:-UseCondCardMark")) {
            List<String> command = parsed().childCommand("java", List.of(flag), "cp");
            assertThat(command).as(flag).filteredOn(f -> f.contains("UseCondCardMark")).containsExactly(flag);
        }
    }

    @Test
    void aHeapFlagOfTheUsersOwnReplacesThem() {
        for (String flag : List.of("-Xmx8g", "-Xms512m", "-XX:-AlwaysPreTouch")) {
            List<String> command = parsed().childCommand("java", List.of(flag), "cp");
            assertThat(command).as(flag).doesNotContain("-Xms2g", "-Xmx2g", "-XX:+AlwaysPreTouch").contains(flag);
            assertThat(command).endsWith("bench", "overhead", "--tasks", "100000", "--seed", "42");
        }
    }
}
