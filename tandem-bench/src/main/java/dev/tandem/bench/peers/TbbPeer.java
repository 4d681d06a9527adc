package dev.tandem.bench.peers;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The oneTBB baseline for per-task overhead: a {@link SyntheticDag}'s explicit form run as a
 * {@code tbb::flow::graph} of {@code continue_node<continue_msg>}s joined by {@code make_edge}.
 *
 * <p>The C++ program ({@code tbb_peer.cpp}, a resource beside this class) is built on first use:
 * it is extracted to {@code ${java.io.tmpdir}/tandem-bench-tbb/<hash of source and compiler>/}
 * and compiled there with {@code g++ -O2 -std=c++17 ... -ltbb} unless the binary already exists.
 * Each {@link #run} writes the DAG to a file, runs the binary on it and parses the one line it
 * prints. The program limits oneTBB to {@code threads} threads with {@code global_control}, times
 * each repetition from the first node built to {@code wait_for_all()}, and reports the best.
 *
 * <p>Unlike the {@link ForkJoinPeer}, a flow graph is built before it runs: an edge made to a
 * node whose predecessor already fired would never deliver its message, so the sources are
 * started only once the whole graph exists.
 *
 * <p>A missing or broken toolchain is a result, not an exception: {@link Result.Unavailable}
 * says what is missing and how to install it. Every external process runs under a timeout.
 */
public final class TbbPeer {

    private static final Logger LOG = LoggerFactory.getLogger(TbbPeer.class);

    static final String SOURCE_RESOURCE = "tbb_peer.cpp";
    static final String INSTALL_HINT = "apt-get install libtbb-dev";
    static final Duration COMPILE_TIMEOUT = Duration.ofSeconds(120);

    private static final String BINARY_NAME = "tbb_peer";
    private static final String OUTPUT_PREFIX = "ns_per_task=";
    private static final int DAG_MAGIC = 0x54444147; // "TDAG", checked by tbb_peer.cpp
    private static final Duration RUN_TIMEOUT_BASE = Duration.ofSeconds(60);
    private static final long RUN_TIMEOUT_NANOS_PER_TASK_RUN = 20_000;

    /** Serialises compilation within this JVM; other JVMs are handled by the atomic move. */
    private static final ReentrantLock COMPILE_LOCK = new ReentrantLock();

    /**
     * Why a build failed, per build directory (source and compiler), for the rest of this JVM:
     * a bench asks once per row, and a missing libtbb-dev does not appear between rows.
     */
    private static final Map<Path, String> FAILED_BUILDS = new ConcurrentHashMap<>();

    private TbbPeer() {}

    /** The outcome of {@link #run}: a figure, or the reason there is none. */
    public sealed interface Result {

        /** The best repetition's nanoseconds per task. */
        record Measured(double nsPerTask) implements Result {}

        /** The peer could not run here; {@code reason} says why and, where it can, how to fix it. */
        record Unavailable(String reason) implements Result {
            public Unavailable {
                Objects.requireNonNull(reason, "reason");
            }
        }

        static Result measured(double nsPerTask) {
            return new Measured(nsPerTask);
        }

        static Result unavailable(String reason) {
            return new Unavailable(reason);
        }
    }

    /**
     * Runs {@code dag} on oneTBB with {@code threads} threads: one warm-up run that also checks
     * every node ran after its predecessors, then {@code repetitions} timed runs.
     */
    public static Result run(SyntheticDag dag, int threads, int repetitions) {
        return run(dag, threads, repetitions, "g++", Path.of(System.getProperty("java.io.tmpdir"), "tandem-bench-tbb"));
    }

    /** {@link #run(SyntheticDag, int, int)} with the compiler and the cache directory chosen by the caller. */
    static Result run(SyntheticDag dag, int threads, int repetitions, String compiler, Path cacheRoot) {
        Objects.requireNonNull(dag, "dag");
        if (threads < 1) {
            throw new IllegalArgumentException("threads must be at least 1, got " + threads);
        }
        if (repetitions < 1) {
            throw new IllegalArgumentException("repetitions must be at least 1, got " + repetitions);
        }
        try {
            Path binary = compiledBinary(compiler, cacheRoot);
            return runBinary(binary, dag, threads, repetitions);
        } catch (UnavailableException e) {
            LOG.debug("oneTBB peer unavailable: {}", e.getMessage());
            return Result.unavailable(e.getMessage());
        }
    }

    // ---------------------------------------------------------------- compile

    private static Path compiledBinary(String compiler, Path cacheRoot) throws UnavailableException {
        Path compilerPath = findExecutable(compiler);
        if (compilerPath == null) {
            throw new UnavailableException(compiler + " not found on PATH: apt-get install g++ libtbb-dev");
        }
        byte[] source = readSource();
        Path directory = cacheRoot.resolve(cacheKey(source, compilerPath));
        Path binary = directory.resolve(BINARY_NAME);
        COMPILE_LOCK.lock();
        try {
            if (Files.isExecutable(binary)) {
                return binary;
            }
            String failed = FAILED_BUILDS.get(directory);
            if (failed != null) {
                throw new UnavailableException(failed);
            }
            Files.createDirectories(directory);
            Path sourceFile = directory.resolve(SOURCE_RESOURCE);
            Path sourceTemp = Files.createTempFile(directory, "tbb_peer-", ".cpp.tmp");
            Files.write(sourceTemp, source);
            Files.move(sourceTemp, sourceFile, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
            String unique = ProcessHandle.current().pid() + "-" + System.nanoTime();
            Path binaryTemp = directory.resolve(BINARY_NAME + "-" + unique + ".tmp");
            Path log = directory.resolve("compile-" + unique + ".log");
            try {
                List<String> command = List.of(
                        compilerPath.toString(), "-O2", "-std=c++17", "-o", binaryTemp.toString(), sourceFile.toString(),
                        "-ltbb");
                LOG.info("Compiling the oneTBB peer: {}", String.join(" ", command));
                int exit = runProcess(command, log, log, COMPILE_TIMEOUT, compiler + " compiling the oneTBB peer");
                if (exit != 0) {
                    String reason = diagnoseCompileFailure(compiler, exit, readLines(log));
                    FAILED_BUILDS.put(directory, reason);
                    throw new UnavailableException(reason);
                }
                Files.move(binaryTemp, binary, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
                return binary;
            } finally {
                Files.deleteIfExists(binaryTemp);
                Files.deleteIfExists(log);
            }
        } catch (IOException e) {
            throw new UnavailableException("cannot build the oneTBB peer in " + directory + ": " + e);
        } finally {
            COMPILE_LOCK.unlock();
        }
    }

    static String diagnoseCompileFailure(String compiler, int exit, List<String> output) {
        for (String line : output) {
            if (line.contains("oneTBB headers not found") || line.contains("flow_graph.h: No such file")) {
                return "oneTBB headers not found: " + INSTALL_HINT;
            }
            if (line.contains("cannot find -ltbb")) {
                return "the linker cannot find libtbb: " + INSTALL_HINT;
            }
        }
        String first = output.stream()
                .filter(line -> line.contains("error"))
                .findFirst()
                .orElse(output.isEmpty() ? "no output" : output.getFirst());
        return compiler + " failed to compile the oneTBB peer (exit code " + exit + "): " + first.strip();
    }

    private static byte[] readSource() {
        try (InputStream in = TbbPeer.class.getResourceAsStream(SOURCE_RESOURCE)) {
            if (in == null) {
                throw new IllegalStateException("resource " + SOURCE_RESOURCE + " is missing beside " + TbbPeer.class);
            }
            return in.readAllBytes();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read resource " + SOURCE_RESOURCE, e);
        }
    }

    private static String cacheKey(byte[] source, Path compiler) {
        try {
            MessageDigest digest = MessageDigest.getInstance("SHA-256");
            digest.update(source);
            digest.update((byte) 0);
            digest.update(compiler.toString().getBytes(StandardCharsets.UTF_8));
            return HexFormat.of().formatHex(digest.digest(), 0, 8);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every JDK provides SHA-256", e);
        }
    }

    /** {@code name} itself if it contains a path separator, else the first match on {@code PATH}; null if none. */
    static Path findExecutable(String name) {
        if (name.indexOf('/') >= 0 || name.indexOf(File.separatorChar) >= 0) {
            Path path = Path.of(name);
            return Files.isRegularFile(path) && Files.isExecutable(path) ? path : null;
        }
        String pathVariable = System.getenv("PATH");
        if (pathVariable == null) {
            return null;
        }
        for (String directory : pathVariable.split(File.pathSeparator)) {
            if (directory.isEmpty()) {
                continue;
            }
            Path candidate = Path.of(directory, name);
            if (Files.isRegularFile(candidate) && Files.isExecutable(candidate)) {
                return candidate;
            }
        }
        return null;
    }

    // ---------------------------------------------------------------- run

    private static Result runBinary(Path binary, SyntheticDag dag, int threads, int repetitions)
            throws UnavailableException {
        Path directory = binary.getParent();
        Path dagFile = null;
        Path stdout = null;
        Path stderr = null;
        try {
            dagFile = Files.createTempFile(directory, "dag-", ".bin");
            writeDag(dag, dagFile);
            stdout = Files.createTempFile(directory, "run-", ".out");
            stderr = Files.createTempFile(directory, "run-", ".err");
            List<String> command = List.of(
                    binary.toString(), dagFile.toString(), Integer.toString(threads), Integer.toString(repetitions));
            Duration timeout = RUN_TIMEOUT_BASE.plusNanos(
                    RUN_TIMEOUT_NANOS_PER_TASK_RUN * dag.taskCount() * (repetitions + 1L));
            LOG.debug("Running the oneTBB peer on {}: {}", dag, String.join(" ", command));
            int exit = runProcess(command, stdout, stderr, timeout, "the oneTBB peer on " + dag);
            if (exit != 0) {
                throw new UnavailableException(diagnoseRunFailure(exit, readLines(stderr)));
            }
            return parseOutput(readLines(stdout));
        } catch (IOException e) {
            throw new UnavailableException("cannot run the oneTBB peer " + binary + ": " + e);
        } finally {
            deleteQuietly(dagFile);
            deleteQuietly(stdout);
            deleteQuietly(stderr);
        }
    }

    private static String diagnoseRunFailure(int exit, List<String> stderr) {
        String first = stderr.isEmpty() ? "no output" : stderr.getFirst().strip();
        String hint = first.contains("error while loading shared libraries") ? "; " + INSTALL_HINT : "";
        return "the oneTBB peer failed (exit code " + exit + "): " + first + hint;
    }

    static Result parseOutput(List<String> lines) {
        for (String line : lines) {
            String stripped = line.strip();
            if (stripped.startsWith(OUTPUT_PREFIX)) {
                try {
                    double nsPerTask = Double.parseDouble(stripped.substring(OUTPUT_PREFIX.length()));
                    if (nsPerTask > 0 && Double.isFinite(nsPerTask)) {
                        return Result.measured(nsPerTask);
                    }
                } catch (NumberFormatException e) {
                    // falls through to the unavailable result below, which quotes the line
                }
                return Result.unavailable("the oneTBB peer printed an invalid figure: " + stripped);
            }
        }
        return Result.unavailable("the oneTBB peer printed no " + OUTPUT_PREFIX + " line"
                + (lines.isEmpty() ? "" : ": " + lines.getFirst().strip()));
    }

    /**
     * Writes the explicit form as little-endian int32s: magic, task count, edge count, then per
     * task its predecessor count and predecessors. tbb_peer.cpp reads exactly this layout.
     */
    static void writeDag(SyntheticDag dag, Path file) throws IOException {
        if (dag.edgeCount() > Integer.MAX_VALUE) {
            throw new IOException(dag + " has more edges than the DAG file format can count");
        }
        ByteBuffer buffer = ByteBuffer.allocate(1 << 16).order(ByteOrder.LITTLE_ENDIAN);
        try (FileChannel channel = FileChannel.open(
                file, StandardOpenOption.WRITE, StandardOpenOption.CREATE, StandardOpenOption.TRUNCATE_EXISTING)) {
            buffer.putInt(DAG_MAGIC).putInt(dag.taskCount()).putInt((int) dag.edgeCount());
            for (int task = 0; task < dag.taskCount(); task++) {
                int count = dag.predecessorCount(task);
                buffer = flushIfFull(channel, buffer);
                buffer.putInt(count);
                for (int k = 0; k < count; k++) {
                    buffer = flushIfFull(channel, buffer);
                    buffer.putInt(dag.predecessor(task, k));
                }
            }
            buffer.flip();
            while (buffer.hasRemaining()) {
                channel.write(buffer);
            }
        }
    }

    private static ByteBuffer flushIfFull(FileChannel channel, ByteBuffer buffer) throws IOException {
        if (buffer.remaining() >= Integer.BYTES) {
            return buffer;
        }
        buffer.flip();
        while (buffer.hasRemaining()) {
            channel.write(buffer);
        }
        return buffer.clear();
    }

    // ---------------------------------------------------------------- processes

    /**
     * Runs {@code command} with its output in files (so a chatty process never blocks on a full
     * pipe) and returns its exit code; kills it and reports unavailable when it outlives {@code timeout}.
     */
    private static int runProcess(List<String> command, Path stdout, Path stderr, Duration timeout, String what)
            throws UnavailableException, IOException {
        ProcessBuilder builder = new ProcessBuilder(command);
        if (stdout.equals(stderr)) {
            builder.redirectErrorStream(true).redirectOutput(stdout.toFile());
        } else {
            builder.redirectOutput(stdout.toFile()).redirectError(stderr.toFile());
        }
        Process process;
        try {
            process = builder.start();
        } catch (IOException e) {
            throw new UnavailableException("cannot start " + command.getFirst() + ": " + e.getMessage());
        }
        try {
            process.getOutputStream().close(); // neither process reads its input
        } catch (IOException e) {
            LOG.debug("Could not close the input of {}: {}", command.getFirst(), e.toString());
        }
        try {
            if (!process.waitFor(timeout.toNanos(), TimeUnit.NANOSECONDS)) {
                process.destroyForcibly();
                throw new UnavailableException(what + " did not finish within " + timeout.toSeconds() + " s");
            }
            return process.exitValue();
        } catch (InterruptedException e) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
            throw new UnavailableException("interrupted while waiting for " + what);
        }
    }

    private static List<String> readLines(Path file) throws IOException {
        // Decoding replaces malformed bytes, so a compiler message in another charset still reads.
        return new String(Files.readAllBytes(file), StandardCharsets.UTF_8)
                .lines()
                .filter(line -> !line.isBlank())
                .toList();
    }

    private static void deleteQuietly(Path file) {
        if (file == null) {
            return;
        }
        try {
            Files.deleteIfExists(file);
        } catch (IOException e) {
            LOG.debug("Could not delete {}: {}", file, e.toString());
        }
    }

    /** Carries the reason the peer cannot run to {@link #run}, which turns it into a result. */
    private static final class UnavailableException extends Exception {
        UnavailableException(String reason) {
            super(reason, null, false, false);
        }
    }
}
