package dev.tandem.cli;

import java.lang.management.ManagementFactory;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/** The command line that runs this CLI again in a child JVM: for benches that need a fresh or differently flagged one. */
final class ChildJvm {
    private ChildJvm() {}

    /** This JVM's {@code java} launcher. */
    static String java() {
        return Path.of(System.getProperty("java.home"), "bin", "java").toString();
    }

    /** This JVM's own flags: the launcher's and {@code TANDEM_JAVA_OPTS}. */
    static List<String> flags() {
        return ManagementFactory.getRuntimeMXBean().getInputArguments();
    }

    static String classPath() {
        return System.getProperty("java.class.path");
    }

    /** {@code java flags -cp classPath dev.tandem.cli.Main args}. */
    static List<String> command(String java, List<String> flags, String classPath, List<String> args) {
        List<String> command = new ArrayList<>();
        command.add(java);
        command.addAll(flags);
        command.addAll(List.of("-cp", classPath, Main.class.getName()));
        command.addAll(args);
        return command;
    }
}
