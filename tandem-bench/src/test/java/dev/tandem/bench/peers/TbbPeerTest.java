package dev.tandem.bench.peers;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tandem.bench.peers.TbbPeer.Result;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class TbbPeerTest {

    /** Shared by the tests of this class, so the real peer is compiled once per test run. */
    @TempDir
    static Path cache;

    @Test
    void measuresSmallDagsWhenLibtbbDevIsInstalledAndSaysHowToInstallItWhenNot() {
        boolean compilerPresent = TbbPeer.findExecutable("g++") != null;
        boolean headersPresent = Stream.of("/usr/include", "/usr/local/include")
                .anyMatch(include -> Files.exists(Path.of(include, "oneapi/tbb/flow_graph.h"))
                        || Files.exists(Path.of(include, "tbb/flow_graph.h")));

        for (SyntheticDag dag :
                List.of(SyntheticDag.random(2_000, 1), SyntheticDag.chain(2_000), SyntheticDag.fanout(2_000))) {
            Result result = TbbPeer.run(dag, 2, 2, "g++", cache);

            if (compilerPresent && headersPresent) {
                assertThat(result)
                        .as("g++ and the oneTBB headers are installed, so %s must be measured", dag)
                        .isInstanceOf(Result.Measured.class);
                assertThat(((Result.Measured) result).nsPerTask()).isPositive().isFinite();
            } else {
                assertThat(result)
                        .as("g++ present: %s, oneTBB headers present: %s", compilerPresent, headersPresent)
                        .isInstanceOf(Result.Unavailable.class);
                assertThat(((Result.Unavailable) result).reason()).contains("libtbb-dev");
            }
        }
    }

    @Test
    void aMissingCompilerIsUnavailableNotAnError() {
        Result result = TbbPeer.run(SyntheticDag.chain(10), 1, 1, "tandem-no-such-compiler", cache);

        assertThat(result).isInstanceOf(Result.Unavailable.class);
        assertThat(((Result.Unavailable) result).reason())
                .contains("tandem-no-such-compiler not found")
                .contains("libtbb-dev");
    }

    @Test
    void missingOneTbbHeadersAreReportedWithTheirPackage() throws IOException {
        // A stand-in compiler that fails the way g++ does on tbb_peer.cpp without libtbb-dev.
        Path compiler = cache.resolve("g++-without-tbb");
        Files.writeString(compiler, """
                #!/bin/sh
                echo 'tbb_peer.cpp:30:2: error: #error "oneTBB headers not found"' >&2
                echo 'compilation terminated.' >&2
                exit 1
                """);
        Files.setPosixFilePermissions(compiler, PosixFilePermissions.fromString("rwx------"));

        Result result = TbbPeer.run(SyntheticDag.chain(10), 1, 1, compiler.toString(), cache);

        assertThat(result).isEqualTo(Result.unavailable("oneTBB headers not found: apt-get install libtbb-dev"));
    }

    /** A bench asks once per row; a build that failed is not tried again in the same JVM. */
    @Test
    void aFailedBuildIsTriedOncePerRun() throws IOException {
        Path calls = cache.resolve("calls");
        Path compiler = cache.resolve("g++-counting");
        Files.writeString(compiler, """
                #!/bin/sh
                echo x >> '%s'
                echo 'tbb_peer.cpp:30:2: error: #error "oneTBB headers not found"' >&2
                exit 1
                """.formatted(calls));
        Files.setPosixFilePermissions(compiler, PosixFilePermissions.fromString("rwx------"));

        Result first = TbbPeer.run(SyntheticDag.chain(10), 1, 1, compiler.toString(), cache);
        Result second = TbbPeer.run(SyntheticDag.fanout(100), 2, 1, compiler.toString(), cache);

        assertThat(second).isEqualTo(first)
                .isEqualTo(Result.unavailable("oneTBB headers not found: apt-get install libtbb-dev"));
        assertThat(Files.readAllLines(calls)).as("compiler runs").hasSize(1);
    }

    @Test
    void compileFailuresAreDiagnosedFromTheCompilerOutput() {
        assertThat(TbbPeer.diagnoseCompileFailure("g++", 1, List.of("/usr/bin/ld: cannot find -ltbb: No such file")))
                .isEqualTo("the linker cannot find libtbb: apt-get install libtbb-dev");
        assertThat(TbbPeer.diagnoseCompileFailure("g++", 1, List.of(
                        "tbb_peer.cpp: In function 'int main()':", "tbb_peer.cpp:9:5: error: 'x' was not declared")))
                .isEqualTo("g++ failed to compile the oneTBB peer (exit code 1): tbb_peer.cpp:9:5: error: 'x' was not declared");
    }

    @Test
    void parsesTheSingleOutputLine() {
        assertThat(TbbPeer.parseOutput(List.of("ns_per_task=123.500"))).isEqualTo(Result.measured(123.5));
        assertThat(TbbPeer.parseOutput(List.of("ns_per_task=nan"))).isInstanceOf(Result.Unavailable.class);
        assertThat(TbbPeer.parseOutput(List.of())).isInstanceOf(Result.Unavailable.class);
    }

    @Test
    void writesTheExplicitFormAsLittleEndianInts() throws IOException {
        Path file = cache.resolve("chain3.bin");

        TbbPeer.writeDag(SyntheticDag.chain(3), file);

        ByteBuffer bytes = ByteBuffer.wrap(Files.readAllBytes(file)).order(ByteOrder.LITTLE_ENDIAN);
        int[] ints = new int[bytes.remaining() / Integer.BYTES];
        bytes.asIntBuffer().get(ints);
        // magic "TDAG", 3 tasks, 2 edges; task 0: none; task 1: {0}; task 2: {1}
        assertThat(ints).containsExactly(0x54444147, 3, 2, 0, 1, 0, 1, 1);
    }
}
