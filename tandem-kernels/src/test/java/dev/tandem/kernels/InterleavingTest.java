package dev.tandem.kernels;

import static dev.tandem.kernels.Tensors.PAD;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tandem.kernels.scalar.Interleaving;
import dev.tandem.kernels.scalar.Q8_0X16;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * {@link Interleaving#groups} with a layout of its own: any one-to-one layout of a group (random
 * permutations here; each type's real layout is its own test's) moves every byte to where the
 * layout says, group after group, and copies the rows after the last group as they are; a layout
 * that is not one to one onto its group is refused before a byte moves.
 */
class InterleavingTest {

    /** q8_0_x16's layout, as {@link QuantOps#interleaveQ8_0} gives it. */
    private static final Interleaving.ByteAt Q8_0_LAYOUT = (b, blocks, j, row) ->
            j < 2 ? Q8_0X16.scaleAt(b, blocks, row) + j : Q8_0X16.quantAt(b, blocks, j - 2, row);

    @ParameterizedTest(name = "rows = {0}, cols = {1}, seed = {2}")
    @CsvSource({"16, 32, 1", "33, 64, 2", "64, 256, 3", "21, 128, 4"})
    void everyByteGoesWhereARandomLayoutSays(int rows, int cols, long seed) {
        int blockBytes = TensorType.Q8_0.blockBytes();
        int blocks = cols / TensorType.Q8_0.blockSize();
        long rowBytes = TensorType.Q8_0.rowBytes(cols);
        List<Integer> places = new ArrayList<>();
        for (int k = 0; k < 16 * blocks * blockBytes; k++) {
            places.add(k);
        }
        Collections.shuffle(places, new Random(seed));
        long bytes = rowBytes * rows;
        try (Tensors t = new Tensors(seed)) {
            MemorySegment src = GgufBlocks.random(t, TensorType.Q8_0, (long) rows * cols);
            MemorySegment dst = t.allocate(bytes);
            Interleaving.groups(TensorType.Q8_0, src, PAD, dst, PAD, rows, cols,
                    (b, n, j, row) -> places.get((int) (row * rowBytes) + b * blockBytes + j));
            int grouped = rows - rows % 16;
            for (long from = 0; from < bytes; from++) {
                long to = from < grouped * rowBytes
                        ? from - from % (16 * rowBytes) + places.get((int) (from % (16 * rowBytes)))
                        : from;
                assertThat(dst.get(ValueLayout.JAVA_BYTE, PAD + to)).as("byte %d", from)
                        .isEqualTo(src.get(ValueLayout.JAVA_BYTE, PAD + from));
            }
        }
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource({"outside", "twice"})
    void aLayoutThatIsNotOneToOneIsRefusedBeforeAByteMoves(String fault) {
        int rows = 32;
        int cols = 64;
        long bytes = TensorType.Q8_0.rowBytes(cols) * rows;
        long groupBytes = 16 * TensorType.Q8_0.rowBytes(cols);
        try (Tensors t = new Tensors(0)) {
            MemorySegment src = GgufBlocks.random(t, TensorType.Q8_0, (long) rows * cols);
            MemorySegment dst = t.allocate(bytes);
            Interleaving.ByteAt broken = (b, blocks, j, row) -> {
                if (row == 15 && b == 1 && j == 33) { // the group's last byte to be placed
                    return fault.equals("outside") ? groupBytes : Q8_0_LAYOUT.at(b, blocks, 32, row);
                }
                return Q8_0_LAYOUT.at(b, blocks, j, row);
            };
            assertThatThrownBy(() -> Interleaving.groups(TensorType.Q8_0, src, PAD, dst, PAD, rows, cols, broken))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("Q8_0's interleaving puts byte 33 of block 1 of row 15");
            assertThat(dst.asSlice(PAD, bytes).mismatch(MemorySegment.ofArray(new byte[(int) bytes]))).isEqualTo(-1);
        }
    }
}
