package dev.tandem.device;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.File;
import java.io.IOException;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The card-mark advice: only for the card-table collectors, and only without conditional marks. */
class CardMarksTest {

    @Test
    void theParallelAndSerialCollectorsWithoutConditionalMarksAreAdvisedAndNamed() {
        assertThat(CardMarks.advice(true, false, false)).contains("parallel collector", "-XX:+UseCondCardMark");
        assertThat(CardMarks.advice(false, true, false)).contains("serial collector", "-XX:+UseCondCardMark");
    }

    @Test
    void conditionalMarksOrAnotherCollectorNeedNoAdvice() {
        assertThat(CardMarks.advice(true, false, true)).isNull();
        assertThat(CardMarks.advice(false, true, true)).isNull();
        assertThat(CardMarks.advice(false, false, false)).isNull(); // G1, ZGC, Shenandoah
    }

    /** The options are read from the running JVM: child JVMs with each collector and flag. */
    @Test
    void aJvmsOwnOptionsDecideTheAdvice() throws Exception {
        assertThat(probe("-XX:+UseParallelGC")).contains("parallel collector");
        assertThat(probe("-XX:+UseSerialGC")).contains("serial collector");
        assertThat(probe("-XX:+UseParallelGC", "-XX:+UseCondCardMark")).isEqualTo("null");
        assertThat(probe("-XX:+UseG1GC")).isEqualTo("null");
    }

    private static String probe(String... flags) throws IOException, InterruptedException, URISyntaxException {
        String classPath = String.join(File.pathSeparator, location(CardMarks.class), location(CardMarksProbe.class),
                location(org.slf4j.Logger.class));
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        command.addAll(List.of(flags));
        command.addAll(List.of("-cp", classPath, CardMarksProbe.class.getName()));
        Process process = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.DISCARD).start();
        String out = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
        assertThat(process.waitFor(60, TimeUnit.SECONDS)).as("%s ended", command).isTrue();
        assertThat(process.exitValue()).as("%s exit", command).isZero();
        return out;
    }

    private static String location(Class<?> type) throws URISyntaxException {
        return Path.of(type.getProtectionDomain().getCodeSource().getLocation().toURI()).toString();
    }
}
