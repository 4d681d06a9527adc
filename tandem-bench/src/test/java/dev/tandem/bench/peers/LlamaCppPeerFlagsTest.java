package dev.tandem.bench.peers;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Set;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

class LlamaCppPeerFlagsTest {

    // The AVX-512 flags of an AMD EPYC Zen 4 (family 25, model 17): AVX-512 VNNI, no AVX-VNNI.
    private static final String ZEN4_CPUINFO = """
            processor\t: 0
            vendor_id\t: AuthenticAMD
            cpu family\t: 25
            flags\t\t: fpu sse2 avx f16c avx2 fma avx512f avx512dq avx512vbmi avx512_vbmi2 avx512_vnni avx512_bf16
            bugs\t\t: sysret_ss_attrs
            processor\t: 1
            flags\t\t: something else
            """;

    @Test
    void theFirstFlagsLineOfCpuinfoIsRead() {
        assertThat(LlamaCppPeer.cpuFlags(ZEN4_CPUINFO))
                .contains("avx2", "fma", "f16c", "avx512f", "avx512vbmi", "avx512_vnni", "avx512_bf16")
                .doesNotContain("avx_vnni", "something", "else");
        assertThat(LlamaCppPeer.cpuFlags(ZEN4_CPUINFO)).isEqualTo(Set.of("fpu", "sse2", "avx", "f16c", "avx2", "fma",
                "avx512f", "avx512dq", "avx512vbmi", "avx512_vbmi2", "avx512_vnni", "avx512_bf16"));
        assertThat(LlamaCppPeer.cpuFlags("processor : 0\nmodel name : x\n")).isEmpty();
    }

    @Test
    void anInstructionSetTheCpuLacksIsTurnedOff() {
        var flags = LlamaCppPeer.cmakeFlags(LlamaCppPeer.cpuFlags(ZEN4_CPUINFO));
        assertThat(flags).contains("-DGGML_AVX_VNNI=OFF", "-DGGML_AVX512_VNNI=ON", "-DGGML_AVX512_BF16=ON",
                "-DGGML_AVX512=ON", "-DGGML_AVX2=ON", "-DGGML_NATIVE=OFF", "-DGGML_AMX_INT8=OFF");
        assertThat(flags).doesNotContain("-DGGML_AVX_VNNI=ON").hasSameSizeAs(LlamaCppPeer.CMAKE_FLAGS);
    }

    @Test
    void aCpuWithEveryInstructionSetGetsTheStrongBuildAndAmxStaysOff() {
        Set<String> sapphireRapids = Set.of("avx2", "fma", "f16c", "avx512f", "avx512vbmi", "avx512_vnni",
                "avx512_bf16", "avx_vnni", "amx_tile", "amx_int8", "amx_bf16");
        assertThat(LlamaCppPeer.cmakeFlags(sapphireRapids)).isEqualTo(LlamaCppPeer.CMAKE_FLAGS);
        assertThat(LlamaCppPeer.CMAKE_FLAGS).contains("-DGGML_AMX_TILE=OFF", "-DGGML_AMX_INT8=OFF",
                "-DGGML_AMX_BF16=OFF");
    }

    @Test
    void unknownFlagsGiveTheStrongBuild() {
        assertThat(LlamaCppPeer.cmakeFlags(Set.of())).isEqualTo(LlamaCppPeer.CMAKE_FLAGS);
    }

    @Test
    void buildsForDifferentInstructionSetsLiveInDifferentDirectories() {
        String zen4 = LlamaCppPeer.buildKey(LlamaCppPeer.cmakeFlags(LlamaCppPeer.cpuFlags(ZEN4_CPUINFO)));
        String avx2Only = LlamaCppPeer.buildKey(LlamaCppPeer.cmakeFlags(Set.of("avx2", "fma", "f16c")));
        assertThat(zen4).isNotEqualTo(avx2Only)
                .isNotEqualTo(LlamaCppPeer.buildKey(LlamaCppPeer.CMAKE_FLAGS));
        String expected = "llama.cpp-" + LlamaCppPeer.NPM_VERSION;
        if (!LlamaCppPeer.cmakeFlags().equals(LlamaCppPeer.CMAKE_FLAGS)) {
            expected += "-" + LlamaCppPeer.buildKey(LlamaCppPeer.cmakeFlags());
        }
        assertThat(LlamaCppPeer.home().getFileName().toString()).isEqualTo(expected);
    }

    @Test
    void thisMachinesFlagsAreReadAndGiveAFullConfiguration() {
        Assumptions.assumeTrue(Files.isReadable(Path.of("/proc/cpuinfo")), "no /proc/cpuinfo here");
        assertThat(LlamaCppPeer.cpuFlags()).isNotEmpty();
        assertThat(LlamaCppPeer.cmakeFlags()).hasSameSizeAs(LlamaCppPeer.CMAKE_FLAGS)
                .isEqualTo(LlamaCppPeer.cmakeFlags(LlamaCppPeer.cpuFlags()));
    }
}
