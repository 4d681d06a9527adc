package dev.tandem.cluster;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;

/**
 * A cluster node in a JVM of its own ({@link ClusterMain} on this test's class path), its output
 * (stdout and the log on stderr, merged) kept line by line so that a test can wait for a line.
 */
final class NodeProcess implements AutoCloseable {
    final String name;
    final Process process;
    private final List<String> lines = new ArrayList<>();
    private boolean ended;

    private NodeProcess(String name, Process process) {
        this.name = name;
        this.process = process;
        Thread.ofVirtual().name("node-output-" + name).start(this::pump);
    }

    static NodeProcess start(String name, List<String> jvmFlags, List<String> args) {
        return start(name, null, ClusterMain.class, jvmFlags, args);
    }

    /**
     * A JVM running {@code main} on this test's class path, pinned with {@code taskset -c cpus}
     * when {@code cpus} is not null.
     */
    static NodeProcess start(String name, String cpus, Class<?> main, List<String> jvmFlags, List<String> args) {
        List<String> command = new ArrayList<>();
        if (cpus != null) {
            command.addAll(List.of("taskset", "-c", cpus));
        }
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        command.addAll(List.of("--add-modules", "jdk.incubator.vector", "--enable-native-access=ALL-UNNAMED",
                "--sun-misc-unsafe-memory-access=allow", "-Xlog:disable", "-Xlog:all=warning:stderr", "-Xmx512m",
                "-XX:+UseParallelGC", "-XX:+UseCondCardMark"));
        command.addAll(jvmFlags);
        command.addAll(List.of("-cp", System.getProperty("java.class.path"), main.getName()));
        command.addAll(args);
        try {
            return new NodeProcess(name, new ProcessBuilder(command).redirectErrorStream(true).start());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private void pump() {
        try (BufferedReader in = new BufferedReader(
                new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
            String line;
            while ((line = in.readLine()) != null) {
                synchronized (lines) {
                    lines.add(line);
                    lines.notifyAll();
                }
            }
        } catch (IOException e) {
            // the process is gone
        } finally {
            synchronized (lines) {
                ended = true;
                lines.notifyAll();
            }
        }
    }

    /** Waits until {@code count} lines match; returns them. Fails with the node's output otherwise. */
    List<String> await(Predicate<String> match, int count, Duration timeout, String what) {
        long end = System.nanoTime() + timeout.toNanos();
        synchronized (lines) {
            while (true) {
                List<String> found = lines.stream().filter(match).toList();
                if (found.size() >= count) {
                    return found;
                }
                long left = end - System.nanoTime();
                if (left <= 0 || ended) {
                    throw new AssertionError(name + ": " + (ended ? "exited" : "timed out") + " waiting for " + what
                            + "; its output:\n" + String.join("\n", lines));
                }
                try {
                    lines.wait(Math.max(1, TimeUnit.NANOSECONDS.toMillis(left)));
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new AssertionError("interrupted waiting for " + what);
                }
            }
        }
    }

    List<String> lines(Predicate<String> match) {
        synchronized (lines) {
            return lines.stream().filter(match).toList();
        }
    }

    String output() {
        synchronized (lines) {
            return String.join("\n", lines);
        }
    }

    /** kill -9. */
    void kill() throws InterruptedException {
        process.destroyForcibly();
        process.waitFor();
    }

    /** SIGTERM, then kill -9 if it has not ended within 20 s. */
    @Override
    public void close() {
        if (!process.isAlive()) {
            return;
        }
        process.destroy();
        try {
            if (!process.waitFor(20, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                process.waitFor();
            }
        } catch (InterruptedException e) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
        }
    }

    static int freePort() {
        try (ServerSocket socket = new ServerSocket(0)) {
            return socket.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
