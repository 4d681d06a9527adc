package dev.tandem.bench.trace;

import static org.assertj.core.api.Assertions.assertThat;

import java.awt.image.BufferedImage;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.Set;
import javax.imageio.ImageIO;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SwimlaneChartTest {
    @TempDir
    Path dir;

    @Test
    void drawsRequestsCoresAndBubblesInTheirColors() throws Exception {
        var events = TraceAnalysisTest.oneRequest();
        var report = TraceAnalysis.analyze(events, 1);
        Path png = dir.resolve("chart.png");
        SwimlaneChart.write(events, report, "test", png);
        BufferedImage image = ImageIO.read(png.toFile());
        assertThat(image.getWidth()).isEqualTo(1600);
        Set<Integer> colors = new HashSet<>();
        for (int y = 0; y < image.getHeight(); y++) {
            for (int x = 0; x < image.getWidth(); x++) {
                colors.add(image.getRGB(x, y) & 0xFFFFFF);
            }
        }
        assertThat(colors).as("request 1's color, the bubble red and the token-parallel green")
                .contains(SwimlaneChart.requestColor(0).getRGB() & 0xFFFFFF, 0xC62828, 0x2E7D32);
    }
}
