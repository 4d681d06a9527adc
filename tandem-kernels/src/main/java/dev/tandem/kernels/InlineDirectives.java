package dev.tandem.kernels;

import java.io.IOException;
import java.io.InputStream;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import javax.management.JMException;
import javax.management.MBeanServer;
import javax.management.ObjectName;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Gives C2 the vector kernels' inline list in a JVM started without it, so an application that
 * embeds tandem need not pass {@code -XX:CompileCommandFile}.
 *
 * <p>The list is {@code bin/compile-commands}, which the launcher and the kernels' tests pass to
 * the JVM, carried in this module as a resource: C2 inlines every helper that takes or returns a
 * vector wherever it is called, because in some compile orders it otherwise compiles a helper
 * alone, leaves it out of line and boxes its vectors (a third of the speed, megabytes of garbage a
 * token). Where the JVM's command line names no compile commands of its own, {@link #installOnce}
 * turns the list into a compiler directive ({@code inline: +helper}, {@code -helper} for a
 * {@code dontinline}) for the compilations of tandem's methods and adds it through the
 * {@code Compiler.directives_add} diagnostic command, as {@code jcmd} would. It runs on a virtual
 * thread of its own, once per JVM, started when the vector kernels are chosen: loading the JMX
 * classes takes about 200 ms in a cold JVM, and the kernels compile only after a model has loaded
 * and run for a while. Where it cannot (no {@code jdk.management} in the runtime, another JVM), it
 * says so once at INFO with the flag to pass instead.
 */
final class InlineDirectives {
    private static final Logger log = LoggerFactory.getLogger(InlineDirectives.class);

    /** The compile commands, beside this class in the module. */
    static final String RESOURCE = "compile-commands";

    /** The methods whose compilations the directive applies to: tandem's, where the kernels are inlined. */
    static final String MATCH = "dev/tandem/*.*";

    private static final AtomicBoolean STARTED = new AtomicBoolean();
    private static final CompletableFuture<String> OUTCOME = new CompletableFuture<>();

    private InlineDirectives() {}

    /**
     * Starts the installation, once per JVM, on a virtual thread; the future says what it did
     * ("installed ...", "not needed: ..." or "not installed: ...").
     */
    static CompletableFuture<String> installOnce() {
        if (STARTED.compareAndSet(false, true)) {
            Thread.ofVirtual().name("tandem-inline-directives").start(() -> OUTCOME.complete(install()));
        }
        return OUTCOME;
    }

    private static String install() {
        // The JVM's own options, not ProcessHandle's arguments: those are empty for a long command line
        // (the launcher's class path), and they include no JAVA_TOOL_OPTIONS.
        List<String> arguments;
        try {
            arguments = ManagementFactory.getRuntimeMXBean().getInputArguments();
        } catch (RuntimeException | LinkageError unknown) {
            arguments = List.of();
        }
        String own = compileCommandsOption(arguments);
        if (own != null) {
            log.debug("the JVM was started with {}: its compile commands direct C2", own);
            return "not needed: the JVM was started with " + own;
        }
        try {
            String directive = directive(commands());
            Path file = Files.createTempFile("tandem-inline-directives", ".json");
            try {
                Files.writeString(file, directive, StandardCharsets.UTF_8);
                String answer = diagnosticCommand("compilerDirectivesAdd", file.toString()).strip();
                log.debug("C2 inlines the kernels' vector helpers: {}", answer);
                return "installed: " + answer;
            } finally {
                Files.deleteIfExists(file);
            }
        } catch (IOException | JMException | RuntimeException | LinkageError failure) {
            String why = "not installed: " + failure;
            log.info("could not give C2 the vector kernels' inline list ({}): start the JVM with"
                    + " -XX:CompileCommandFile=bin/compile-commands, as the tandem launcher does, or C2 may box"
                    + " the kernels' vectors in some compile orders", failure.toString());
            return why;
        }
    }

    /** The option among the JVM's arguments that gives its own compile commands, or null. */
    static String compileCommandsOption(List<String> arguments) {
        for (String argument : arguments) {
            if (argument.startsWith("-XX:CompileCommandFile=") || argument.startsWith("-XX:CompileCommand=")
                    || argument.startsWith("-XX:CompilerDirectivesFile=")) {
                return argument;
            }
        }
        return null;
    }

    /** The lines of {@link #RESOURCE}. */
    static List<String> commands() throws IOException {
        try (InputStream in = InlineDirectives.class.getResourceAsStream(RESOURCE)) {
            if (in == null) {
                throw new IOException("the resource " + RESOURCE + " is not in the module");
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8).lines().toList();
        }
    }

    /**
     * The compiler directive of a compile-commands file: its {@code inline} and {@code dontinline}
     * lines as one directive's inline list for {@link #MATCH}; {@code quiet}, comments and blank
     * lines carry nothing a directive needs.
     *
     * @throws IllegalArgumentException for a line of any other command, which a directive would drop
     */
    static String directive(List<String> commands) {
        List<String> inline = new ArrayList<>();
        for (String line : commands) {
            String command = line.strip();
            if (command.isEmpty() || command.startsWith("#") || command.equals("quiet")) {
                continue;
            }
            String[] words = command.split("\\s+");
            if (words.length != 2 || !(words[0].equals("inline") || words[0].equals("dontinline"))
                    || !words[1].matches("[\\w/$]+\\.[\\w$]+")) {
                throw new IllegalArgumentException("a compile command the inline directive cannot carry: " + line);
            }
            inline.add('"' + (words[0].equals("inline") ? "+" : "-") + words[1] + '"');
        }
        if (inline.isEmpty()) {
            throw new IllegalArgumentException("no inline commands");
        }
        return "[{ match: \"" + MATCH + "\", inline: [" + String.join(", ", inline) + "] }]\n";
    }

    /** Runs a diagnostic command of this JVM, as {@code jcmd} would; returns its output. */
    static String diagnosticCommand(String operation, String... arguments) throws JMException {
        MBeanServer server = ManagementFactory.getPlatformMBeanServer();
        Object answer = server.invoke(new ObjectName("com.sun.management:type=DiagnosticCommand"), operation,
                new Object[] {arguments}, new String[] {String[].class.getName()});
        return String.valueOf(answer);
    }
}
