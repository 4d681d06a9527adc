package dev.tandem.cli;

import picocli.CommandLine;
import picocli.CommandLine.Command;

/** The {@code tandem} command. It owns stdout; the library logs through SLF4J only. */
@Command(
        name = "tandem",
        mixinStandardHelpOptions = true,
        version = "tandem 0.1.0",
        description = "A runtime for step-wise streaming inference that pipelines host build and device run.",
        subcommands = {DemoCommand.class, GenerateCommand.class, TokenizeCommand.class, InspectCommand.class,
            BenchCommand.class, TraceCommand.class, ServeCommand.class, AotTrainingCommand.class})
public final class Main implements Runnable {

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public void run() {
        spec.commandLine().usage(System.out);
    }

    public static void main(String[] args) {
        System.exit(execute(args));
    }

    /** Runs the command line and returns its exit code (2 for bad usage). */
    public static int execute(String... args) {
        CommandLine cli = new CommandLine(new Main());
        cli.setExecutionExceptionHandler((ex, line, parse) -> {
            line.getErr().println("tandem: " + ex.getMessage());
            return ex instanceof IllegalArgumentException ? 2 : 1;
        });
        return cli.execute(args);
    }
}
