package dev.tandem.bench.peers;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * llama.cpp as the peer of the decode and serving benchmarks, built from the source tree that the
 * npm package {@code node-llama-cpp@}{@value #NPM_VERSION} ships.
 *
 * <p>On first use it runs, in {@code ${TANDEM_CACHE:-~/.cache/tandem}/llama.cpp-}{@value
 * #NPM_VERSION} (with a suffix naming the instruction sets where they are not all of
 * {@link #CMAKE_FLAGS}'s, so that no build is reused on a CPU it does not suit): {@code npm pack}
 * of the package, {@code tar} to unpack it, {@code git clone} of the bundle
 * {@code package/llama/gitRelease.bundle} it holds, then CMake with {@link #cmakeFlags()}
 * ({@link #CMAKE_FLAGS}, AVX-512 with VNNI and BF16, with each instruction set the CPU lacks
 * turned off, and every AMX kernel off: these machines advertise AMX, and a native build dies of
 * SIGILL in its batched kernels) and a build of {@code llama-bench} and {@code llama-server}. Later uses find the binaries there. Nothing is written into the
 * repository.
 *
 * <p>A missing tool (npm, cmake, git, a C++ compiler) or a failed build is a result, not an
 * exception: {@link Result.Unavailable} says which, so a benchmark reports it in its JSON.
 */
public final class LlamaCppPeer {
    private static final Logger LOG = LoggerFactory.getLogger(LlamaCppPeer.class);

    public static final String NPM_VERSION = "3.21.1";

    /**
     * The strong CPU build, as fast as a native one on the machines it was measured on, without
     * AMX: used as it is where the CPU's flags cannot be read.
     */
    public static final List<String> CMAKE_FLAGS = List.of("-DCMAKE_BUILD_TYPE=Release", "-DGGML_NATIVE=OFF",
            "-DGGML_AVX2=ON", "-DGGML_FMA=ON", "-DGGML_F16C=ON", "-DGGML_AVX512=ON", "-DGGML_AVX512_VBMI=ON",
            "-DGGML_AVX512_VNNI=ON", "-DGGML_AVX512_BF16=ON", "-DGGML_AVX_VNNI=ON", "-DGGML_AMX_TILE=OFF",
            "-DGGML_AMX_INT8=OFF", "-DGGML_AMX_BF16=OFF", "-DLLAMA_CURL=OFF", "-DLLAMA_BUILD_TESTS=OFF",
            "-DBUILD_SHARED_LIBS=OFF");

    /** Each instruction-set option of {@link #CMAKE_FLAGS} and the {@code /proc/cpuinfo} flag it needs. */
    static final Map<String, String> CPU_FLAG_OF = Map.of("GGML_AVX2", "avx2", "GGML_FMA", "fma", "GGML_F16C", "f16c",
            "GGML_AVX512", "avx512f", "GGML_AVX512_VBMI", "avx512vbmi", "GGML_AVX512_VNNI", "avx512_vnni",
            "GGML_AVX512_BF16", "avx512_bf16", "GGML_AVX_VNNI", "avx_vnni");

    /**
     * {@link #CMAKE_FLAGS} with each instruction set on only where {@code cpuFlags} has it (AMX
     * always off): a Zen 4 has AVX-512 VNNI but not the VEX-encoded AVX-VNNI, and a build with it
     * dies of SIGILL in the Q8_0 and Q4_0 dot products. An empty set (flags unknown) gives
     * {@link #CMAKE_FLAGS} unchanged.
     */
    static List<String> cmakeFlags(Set<String> cpuFlags) {
        if (cpuFlags.isEmpty()) {
            return CMAKE_FLAGS;
        }
        List<String> flags = new ArrayList<>();
        for (String flag : CMAKE_FLAGS) {
            String option = flag.substring(2, flag.indexOf('='));
            String needs = CPU_FLAG_OF.get(option);
            flags.add(needs == null ? flag : "-D" + option + (cpuFlags.contains(needs) ? "=ON" : "=OFF"));
        }
        return List.copyOf(flags);
    }

    /** The flags of the first {@code flags} line of a {@code /proc/cpuinfo} text; empty if none. */
    static Set<String> cpuFlags(String cpuinfo) {
        for (String line : cpuinfo.split("\n")) {
            int colon = line.indexOf(':');
            if (colon > 0 && line.substring(0, colon).strip().equals("flags")) {
                return Set.of(line.substring(colon + 1).strip().split("\\s+"));
            }
        }
        return Set.of();
    }

    /** This machine's CPU flags, or an empty set where {@code /proc/cpuinfo} cannot be read. */
    static Set<String> cpuFlags() {
        try {
            return cpuFlags(Files.readString(Path.of("/proc/cpuinfo"), StandardCharsets.UTF_8));
        } catch (IOException | UncheckedIOException e) {
            return Set.of();
        }
    }

    /** The CMake configuration for this machine ({@link #cmakeFlags(Set)} of its CPU flags). */
    public static List<String> cmakeFlags() {
        return cmakeFlags(cpuFlags());
    }

    /** The instruction-set options a configuration turns on, for the build directory's name. */
    static String buildKey(List<String> flags) {
        StringBuilder key = new StringBuilder();
        for (String flag : flags) {
            if (flag.endsWith("=ON") && CPU_FLAG_OF.containsKey(flag.substring(2, flag.length() - 3))) {
                key.append(flag, 2, flag.length() - 3).append(',');
            }
        }
        return Integer.toHexString(key.toString().hashCode());
    }

    private static final Duration STEP_TIMEOUT = Duration.ofMinutes(5);
    private static final Duration BUILD_TIMEOUT = Duration.ofMinutes(60);
    private static final ReentrantLock BUILD_LOCK = new ReentrantLock();

    private LlamaCppPeer() {}

    /** A figure, or why there is none. */
    public sealed interface Result {
        /** Tokens per second of one decode stream (llama-bench's {@code avg_ts}) and its standard deviation. */
        record Measured(double tokensPerSecond, double stddev) implements Result {}

        record Unavailable(String reason) implements Result {
            public Unavailable {
                Objects.requireNonNull(reason, "reason");
            }
        }
    }

    /** Where the sources, the build and its log live. */
    public static Path home() {
        String cache = System.getenv("TANDEM_CACHE");
        Path base = cache != null ? Path.of(cache) : Path.of(System.getProperty("user.home"), ".cache", "tandem");
        List<String> flags = cmakeFlags();
        return base.resolve("llama.cpp-" + NPM_VERSION + (flags.equals(CMAKE_FLAGS) ? "" : "-" + buildKey(flags)));
    }

    /** A binary of the build, e.g. {@code llama-bench}. */
    public static Path binary(String name) {
        return home().resolve("build").resolve("bin").resolve(name);
    }

    /** Builds llama.cpp if it is not built yet; null when it is there, else why it is not. */
    public static String ensureBuilt() {
        if (Files.isExecutable(binary("llama-bench")) && Files.isExecutable(binary("llama-server"))) {
            return null;
        }
        BUILD_LOCK.lock();
        try {
            if (Files.isExecutable(binary("llama-bench")) && Files.isExecutable(binary("llama-server"))) {
                return null;
            }
            for (String tool : List.of("npm", "tar", "git", "cmake", "c++")) {
                if (!onPath(tool)) {
                    return "llama.cpp peer not built: " + tool + " is not on the PATH (the peer is built from the npm"
                            + " package node-llama-cpp@" + NPM_VERSION + " with CMake and a C++ compiler)";
                }
            }
            Path home = home();
            Files.createDirectories(home);
            Path log = home.resolve("build.log");
            LOG.info("building llama.cpp from node-llama-cpp@{} in {} (log: {})", NPM_VERSION, home, log);
            Path src = home.resolve("src");
            if (!Files.isDirectory(src.resolve(".git"))) {
                Path pack = home.resolve("pack");
                Files.createDirectories(pack);
                String failed = run(pack, log, STEP_TIMEOUT, "npm", "pack", "node-llama-cpp@" + NPM_VERSION);
                if (failed == null) {
                    failed = run(pack, log, STEP_TIMEOUT, "tar", "xzf", "node-llama-cpp-" + NPM_VERSION + ".tgz");
                }
                if (failed == null) {
                    failed = run(home, log, STEP_TIMEOUT, "git", "clone", "-q",
                            pack.resolve("package/llama/gitRelease.bundle").toString(), src.toString());
                }
                if (failed != null) {
                    return "llama.cpp peer not built: " + failed;
                }
            }
            List<String> configure = new ArrayList<>(List.of("cmake", "-S", src.toString(), "-B",
                    home.resolve("build").toString()));
            configure.addAll(cmakeFlags());
            String failed = run(home, log, STEP_TIMEOUT, configure.toArray(String[]::new));
            if (failed == null) {
                failed = run(home, log, BUILD_TIMEOUT, "cmake", "--build", home.resolve("build").toString(), "-j",
                        Integer.toString(Runtime.getRuntime().availableProcessors()), "--target", "llama-bench",
                        "llama-server");
            }
            return failed == null ? null : "llama.cpp peer not built: " + failed;
        } catch (IOException e) {
            return "llama.cpp peer not built: " + e.getMessage();
        } finally {
            BUILD_LOCK.unlock();
        }
    }

    /**
     * Decode speed of one stream on {@code gguf}: {@code llama-bench -p 0 -n tokens -t threads -r
     * repetitions -o json}.
     */
    public static Result benchDecode(Path gguf, int tokens, int threads, int repetitions) {
        return bench(gguf, 0, tokens, threads, repetitions);
    }

    /**
     * {@code llama-bench -p tokens -n 0 -t threads -r repetitions}: prompt processing, one batch
     * of {@code tokens} prompt tokens, in tokens per second.
     */
    public static Result benchPrompt(Path gguf, int tokens, int threads, int repetitions) {
        return bench(gguf, tokens, 0, threads, repetitions);
    }

    private static Result bench(Path gguf, int prompt, int tokens, int threads, int repetitions) {
        String missing = ensureBuilt();
        if (missing != null) {
            return new Result.Unavailable(missing);
        }
        try {
            Path out = Files.createTempFile("tandem-llama-bench", ".json");
            try {
                ProcessBuilder pb = new ProcessBuilder(binary("llama-bench").toString(), "-m", gguf.toString(), "-p",
                        Integer.toString(prompt), "-n", Integer.toString(tokens), "-t", Integer.toString(threads), "-r",
                        Integer.toString(repetitions), "-o", "json");
                pb.redirectOutput(out.toFile());
                pb.redirectError(ProcessBuilder.Redirect.DISCARD);
                Process p = pb.start();
                if (!p.waitFor(10, TimeUnit.MINUTES)) {
                    p.destroyForcibly();
                    return new Result.Unavailable("llama-bench did not finish within 10 minutes");
                }
                String json = Files.readString(out, StandardCharsets.UTF_8);
                if (p.exitValue() != 0) {
                    return new Result.Unavailable("llama-bench exited " + p.exitValue() + " on " + gguf
                            + (p.exitValue() == 132 ? " (SIGILL: the build uses an instruction this CPU lacks; its"
                                    + " flags: " + cmakeFlags() + ")" : ""));
                }
                return parseBench(json);
            } finally {
                Files.deleteIfExists(out);
            }
        } catch (IOException e) {
            return new Result.Unavailable("llama-bench: " + e.getMessage());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return new Result.Unavailable("interrupted");
        }
    }

    /** A running {@code llama-server}; closing it stops the process. */
    public record Server(Process process, URI base) implements AutoCloseable {
        @Override
        public void close() {
            process.destroy();
            try {
                if (!process.waitFor(10, TimeUnit.SECONDS)) {
                    process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                process.destroyForcibly();
            }
        }
    }

    /**
     * {@code out}, written by {@code llama-quantize in out scheme} (e.g. {@code Q4_K_M}) unless it
     * exists: the file a user downloads for that scheme, with llama.cpp's own fallbacks.
     *
     * @return null when written (or there), else why not (the peer is missing, the tool failed)
     */
    public static String quantize(Path in, Path out, String scheme) {
        if (Files.isRegularFile(out)) {
            return null;
        }
        String missing = ensureBuilt();
        if (missing != null) {
            return missing;
        }
        try {
            Path partial = out.resolveSibling(out.getFileName() + ".partial");
            Process p = new ProcessBuilder(binary("llama-quantize").toString(), in.toString(), partial.toString(), scheme)
                    .redirectErrorStream(true).start();
            String log = new String(p.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
            if (p.waitFor() != 0) {
                return "llama-quantize " + scheme + " exited " + p.exitValue() + ": "
                        + log.lines().reduce((a, b) -> b).orElse("");
            }
            Files.move(partial, out, java.nio.file.StandardCopyOption.ATOMIC_MOVE);
            return null;
        } catch (IOException e) {
            return "llama-quantize: " + e.getMessage();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return "interrupted";
        }
    }

    /**
     * Starts {@code llama-server -m gguf -t threads -np slots -c slots * slotContext} on a free
     * loopback port and waits (at most 2 minutes) until its {@code /health} answers 200.
     *
     * @return the server, or a reason it is not available
     */
    public static Object startServer(Path gguf, int threads, int slots, int slotContext) {
        String missing = ensureBuilt();
        if (missing != null) {
            return missing;
        }
        try {
            int port;
            try (java.net.ServerSocket probe = new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
                port = probe.getLocalPort();
            }
            Path log = Files.createTempFile("tandem-llama-server", ".log");
            ProcessBuilder pb = new ProcessBuilder(binary("llama-server").toString(), "-m", gguf.toString(), "-t",
                    Integer.toString(threads), "-np", Integer.toString(slots), "-c",
                    Integer.toString(slots * slotContext), "--host", "127.0.0.1", "--port", Integer.toString(port))
                    .redirectErrorStream(true).redirectOutput(log.toFile());
            Process process = pb.start();
            URI base = URI.create("http://127.0.0.1:" + port);
            java.net.http.HttpClient client = java.net.http.HttpClient.newHttpClient();
            long until = System.nanoTime() + TimeUnit.MINUTES.toNanos(2);
            while (System.nanoTime() < until) {
                if (!process.isAlive()) {
                    return "llama-server exited " + process.exitValue() + " (log: " + log + ")";
                }
                try {
                    var response = client.send(java.net.http.HttpRequest.newBuilder(base.resolve("/health"))
                            .timeout(Duration.ofSeconds(2)).build(), java.net.http.HttpResponse.BodyHandlers.discarding());
                    if (response.statusCode() == 200) {
                        return new Server(process, base);
                    }
                } catch (IOException notYet) {
                    // not listening yet
                }
                Thread.sleep(100);
            }
            process.destroyForcibly();
            return "llama-server did not become healthy within 2 minutes (log: " + log + ")";
        } catch (IOException e) {
            return "llama-server: " + e.getMessage();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return "interrupted";
        }
    }

    private static final Pattern AVG = Pattern.compile("\"avg_ts\"\\s*:\\s*([0-9.eE+-]+)");
    private static final Pattern STDDEV = Pattern.compile("\"stddev_ts\"\\s*:\\s*([0-9.eE+-]+)");

    /** The {@code avg_ts} and {@code stddev_ts} of llama-bench's JSON (one test). */
    static Result parseBench(String json) {
        Matcher avg = AVG.matcher(json);
        if (!avg.find()) {
            return new Result.Unavailable("llama-bench printed no avg_ts");
        }
        Matcher sd = STDDEV.matcher(json);
        return new Result.Measured(Double.parseDouble(avg.group(1)), sd.find() ? Double.parseDouble(sd.group(1)) : 0);
    }

    private static boolean onPath(String tool) {
        String path = System.getenv("PATH");
        if (path == null) {
            return false;
        }
        for (String dir : path.split(java.io.File.pathSeparator)) {
            if (Files.isExecutable(Path.of(dir, tool))) {
                return true;
            }
        }
        return false;
    }

    /** Runs a step, appending its output to the log; null on success, else what failed. */
    private static String run(Path dir, Path log, Duration timeout, String... command) throws IOException {
        ProcessBuilder pb = new ProcessBuilder(command).directory(dir.toFile()).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()));
        Process p = pb.start();
        try {
            if (!p.waitFor(timeout.toSeconds(), TimeUnit.SECONDS)) {
                p.destroyForcibly();
                return String.join(" ", command) + " did not finish within " + timeout.toMinutes() + " min (log: " + log + ")";
            }
        } catch (InterruptedException e) {
            p.destroyForcibly();
            Thread.currentThread().interrupt();
            return "interrupted";
        }
        return p.exitValue() == 0 ? null
                : command[0] + " " + command[1] + " exited " + p.exitValue() + " (log: " + log + ")";
    }
}
