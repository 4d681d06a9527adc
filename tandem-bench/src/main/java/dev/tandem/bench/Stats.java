package dev.tandem.bench;

import java.util.Arrays;
import java.util.List;

/** The summary statistics the benchmarks report. */
public final class Stats {
    private Stats() {}

    /** The median of the values that are not NaN (the mean of the middle two for an even count); NaN when none is. */
    public static double median(double[] values) {
        double[] v = Arrays.stream(values).filter(x -> !Double.isNaN(x)).sorted().toArray();
        if (v.length == 0) {
            return Double.NaN;
        }
        return v.length % 2 == 1 ? v[v.length / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
    }

    /** {@link #median(double[])} of a list. */
    public static double median(List<Double> values) {
        return median(values.stream().mapToDouble(Double::doubleValue).toArray());
    }
}
