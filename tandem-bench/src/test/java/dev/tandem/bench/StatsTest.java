package dev.tandem.bench;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

class StatsTest {

    @Test
    void medianOfOddAndEvenCounts() {
        assertThat(Stats.median(new double[] {3, 1, 2})).isEqualTo(2);
        assertThat(Stats.median(new double[] {4, 1, 3, 2})).isEqualTo(2.5);
        assertThat(Stats.median(new double[0])).isNaN();
        assertThat(Stats.median(List.of(3.0, 1.0, 2.0))).isEqualTo(2.0);
        assertThat(Stats.median(List.of(4.0, 1.0, 2.0, 3.0))).isEqualTo(2.5);
        assertThat(Stats.median(List.<Double>of())).isNaN();
    }

    @Test
    void missingFiguresDoNotCount() {
        assertThat(Stats.median(new double[] {Double.NaN, 5, 1, Double.NaN, 3})).isEqualTo(3);
        assertThat(Stats.median(new double[] {Double.NaN, Double.NaN})).isNaN();
    }
}
