package dev.tandem.kernels;

import java.util.Locale;

/**
 * The ggml tensor types tandem reads from GGUF checkpoints, with their ggml type ids and block
 * geometry. Every layout is little-endian; {@link QuantOps} dequantizes each of them to f32.
 *
 * <p>A tensor of a block type is a sequence of blocks, each {@link #blockBytes()} bytes holding
 * {@link #blockSize()} consecutive values; a row of {@code cols} values is {@code cols / blockSize}
 * blocks, so {@code cols} must be a multiple of the block size. The layouts:
 *
 * <ul>
 *   <li>{@link #F32}, {@link #F16}, {@link #BF16}: one value per "block" of 4, 2 and 2 bytes. bf16 is
 *       the upper half of an f32.
 *   <li>{@link #Q8_0}: 32 values in 34 bytes: the scale {@code d} as an f16, then 32 int8
 *       {@code q[j]}; value {@code j} is {@code q[j] * d}.
 *   <li>{@link #Q4_0}: 32 values in 18 bytes: the f16 scale {@code d}, then 16 bytes; value
 *       {@code j < 16} is the low nibble of byte {@code j}, value {@code j + 16} its high nibble, and
 *       a nibble {@code q} means {@code (q - 8) * d}.
 *   <li>{@link #Q5_0}: 32 values in 22 bytes: the f16 scale {@code d}, then the 32 fifth bits
 *       {@code qh} as a little-endian int, then 16 nibble bytes as in {@link #Q4_0}; value
 *       {@code j < 16} is the low nibble of byte {@code j} with bit {@code j} of {@code qh} above it,
 *       value {@code j + 16} the high nibble with bit {@code j + 16}, and a 5-bit {@code q} means
 *       {@code (q - 16) * d}.
 *   <li>{@link #Q4_1}: 32 values in 20 bytes: f16 {@code d}, f16 {@code m}, then 16 nibble bytes
 *       as in {@link #Q4_0}; a nibble {@code q} means {@code q * d + m}.
 *   <li>{@link #Q5_1}: 32 values in 24 bytes: f16 {@code d}, f16 {@code m}, then {@code qh} and 16
 *       nibble bytes as in {@link #Q5_0}; a 5-bit {@code q} means {@code q * d + m}.
 *   <li>{@link #Q2_K}: 256 values in 84 bytes: 16 scale bytes (a 4-bit scale and a 4-bit min per
 *       sub-block of 16), 64 bytes of 2-bit quants, f16 {@code d} and {@code dmin};
 *       {@link #Q3_K}: 110 bytes: 32 bytes of high bits, 64 bytes of 2-bit quants, 12 bytes
 *       packing sixteen 6-bit scales, f16 {@code d}. Which bits make which value is
 *       {@code LowBitsKX16}'s description, from llama.cpp's {@code dequantize_row_q2_K}/{@code _q3_K}.
 *   <li>{@link #Q4_K}: 256 values in 144 bytes: f16 {@code d}, f16 {@code dmin}, 12 bytes packing
 *       eight 6-bit scales and eight 6-bit mins, then 128 bytes of nibbles. Values come in four groups
 *       of 64, each from 32 nibble bytes: the 32 low nibbles with sub-block {@code 2g}'s scale and
 *       min, then the 32 high nibbles with sub-block {@code 2g + 1}'s; a nibble {@code q} means
 *       {@code d * scale * q - dmin * min}. Sub-block {@code i < 4} has scale {@code s[i] & 63} and
 *       min {@code s[i + 4] & 63}; sub-block {@code i >= 4} has scale
 *       {@code (s[i + 4] & 15) | (s[i - 4] >> 6) << 4} and min {@code (s[i + 4] >> 4) | (s[i] >> 6) << 4}.
 *   <li>{@link #Q5_K}: 256 values in 176 bytes: f16 {@code d}, f16 {@code dmin} and 12 scale
 *       bytes as in {@link #Q4_K}, then 32 bytes {@code qh} of fifth bits, then 128 bytes of
 *       nibbles as in {@link #Q4_K}; the value of sub-block {@code t} at position {@code l} takes
 *       bit {@code t} of {@code qh[l]} above its nibble, and a 5-bit {@code q} means
 *       {@code d * scale * q - dmin * min}.
 *   <li>{@link #IQ4_NL}: 32 values in 18 bytes, as {@link #Q4_0}'s, but a nibble {@code n} means
 *       {@code d * kvalues[n]}, llama.cpp's non-linear table ({@code Iq4X16.VALUES}).
 *   <li>{@link #IQ4_XS}: 256 values in 136 bytes: f16 {@code d}, a 16-bit {@code scales_h}, four
 *       bytes {@code scales_l}, then 128 nibble bytes, 16 per sub-block of 32 laid out as
 *       {@link #IQ4_NL}'s; sub-block {@code ib}'s scale is {@code d * (ls - 32)} with
 *       {@code ls = (scales_l[ib / 2] >> 4 (ib % 2)) & 15 | ((scales_h >> 2 ib) & 3) << 4}.
 *   <li>{@link #Q6_K}: 256 values in 210 bytes: 128 bytes {@code ql} (low 4 bits), 64 bytes
 *       {@code qh} (high 2 bits), 16 int8 scales, then the f16 {@code d}. Each half of 128 values
 *       uses 64 {@code ql}, 32 {@code qh} and 8 scales; in a half, for {@code l < 32}, values
 *       {@code l, l + 32, l + 64, l + 96} take the low nibble of {@code ql[l]}, the low nibble of
 *       {@code ql[l + 32]}, the high nibble of {@code ql[l]} and the high nibble of
 *       {@code ql[l + 32]}, joined with bits 0-1, 2-3, 4-5 and 6-7 of {@code qh[l]} above them; a
 *       6-bit {@code q} means {@code d * scale * (q - 32)}, with scale {@code sc[l / 16 + 2k]} for
 *       the {@code k}-th of the four.
 *   <li>{@link #Q4_0_X16}: tandem's own in-memory layout of a q4_0 matrix, never in a file (its
 *       {@link #ggmlId()} is {@code -1}): the same blocks in the same bytes per row, with each
 *       group of 16 consecutive rows {@code [16g, 16g + 16)} interleaved block by block so that one
 *       vector holds two bytes of each of the 16 rows. For block {@code b} of the group, its 288
 *       bytes at {@code b * 288} from the group's start (row {@code 16g}'s offset) hold the 16
 *       rows' f16 scales, row {@code i}'s at {@code 2 * i}, then, for each pair of nibble bytes
 *       {@code 2j, 2j + 1} of the rows' blocks, 32 bytes at {@code 32 + 32 * j}: row {@code i}'s
 *       byte {@code 2j} at {@code 2 * i} among them and its byte {@code 2j + 1} after it. So byte
 *       {@code k} of row {@code i}'s block is at {@code 32 + 32 * (k / 2) + 2 * i + k % 2}. The last {@code rows % 16} rows stay in the q4_0
 *       layout. {@link QuantOps#interleaveQ4_0} makes it; {@link MatmulOps#matmulQ4_0_X16} reads it.
 *   <li>{@link #Q4_K_X16}: the same for q4_K, in tandem's memory only: 144 bytes per 256 values
 *       per row, each group of 16 rows interleaved four superblocks at a time. The superblocks
 *       {@code 4c} to {@code 4c + n - 1} of the group ({@code n} = 4, or what is left of a row),
 *       at {@code 4c * 2304} from the group's start, are first their {@code n} 256-byte headers,
 *       then their {@code n} 2048-byte nibble blocks. Superblock {@code b}'s header (the
 *       {@code b % 4}-th) holds row {@code i}'s f16 {@code d} at {@code 2 * i}, its f16
 *       {@code dmin} at {@code 32 + 2 * i} and byte {@code k} of its 12 scale bytes at
 *       {@code 64 + 16 * k + i}; its nibble block holds byte {@code k} of its 128 nibble bytes at
 *       {@code 32 * (k / 2) + 2 * i + k % 2} (pairs side by side, as in {@link #Q4_0_X16}). The
 *       last {@code rows % 16} rows stay in the q4_K layout.
 *       {@link QuantOps#interleaveQ4_K} makes it; {@link MatmulOps#matmulQ4_K_X16} reads it.
 *   <li>{@link #Q8_0_X16}: the same for q8_0, in tandem's memory only: 34 bytes per 32 values per
 *       row, each group of 16 rows interleaved a pair of blocks at a time. For blocks {@code b}
 *       and {@code b + 1} ({@code b} even) of the group, their 1088 bytes at {@code b * 544} from
 *       the group's start hold row {@code i}'s f16 scale of block {@code b + u} at
 *       {@code 32 * u + 2 * i} and its quant {@code k} of block {@code b + u} at
 *       {@code 64 + 32 * k + 16 * u + i}, so one 16-byte load holds quant {@code k} of a block of
 *       all 16 rows, and the next one the same quant of the next block. A last odd block of a row
 *       takes its 544 bytes alone: scales at {@code 2 * i}, quant {@code k} at
 *       {@code 32 + 16 * k + i}. The last {@code rows % 16} rows stay in the q8_0 layout.
 *       {@link QuantOps#interleaveQ8_0} makes it; {@link MatmulOps#matmulQ8_0_X16} reads it.
 *   <li>{@link #Q6_K_X16}: the same for q6_K, in tandem's memory only: 210 bytes per 256 values per
 *       row, each group of 16 rows interleaved superblock by superblock. For superblock {@code b}
 *       of the group, its 3360 bytes at {@code b * 3360} from the group's start hold row {@code i}'s
 *       f16 {@code d} at {@code 2 * i}, its int8 scale {@code s} at {@code 32 + 16 * s + i}, then
 *       its quants in 32 runs of 96 bytes, in the order the kernel reads them: run
 *       {@code p = 16 * h + 8 * s + t} ({@code h, s} in 0..1, {@code t} in 0..7) at
 *       {@code 288 + 96 * p} holds, 32 bytes each, the pairs of {@code ql} bytes
 *       {@code 2 * (32 * h + 8 * s + t)} and 16 pairs after them, then the pair of {@code qh} bytes
 *       {@code 2 * p}, each pair of the 16 rows side by side (row {@code i}'s at {@code 2 * i}, as in
 *       {@link #Q4_0_X16}). The last {@code rows % 16} rows stay in the q6_K layout. {@link QuantOps#interleaveQ6_K} makes it; {@link MatmulOps#matmulQ6_K_X16} reads it.
 *   <li>{@link #Q5_0_X16}: the same for q5_0, in tandem's memory only: 22 bytes per 32 values per
 *       row, each group of 16 rows interleaved block by block. For block {@code b} of the group,
 *       its 352 bytes at {@code b * 352} from the group's start hold row {@code i}'s f16 scale at
 *       {@code 2 * i}, its four {@code qh} bytes at {@code 32 + 4 * i}, and its nibble byte
 *       {@code k} at {@code 96 + 32 * (k / 2) + 2 * i + k % 2} (pairs side by side, as in
 *       {@link #Q4_0_X16}). The last {@code rows % 16} rows stay in the q5_0 layout.
 *       {@link QuantOps#interleaveQ5_0} makes it; {@link MatmulOps#matmulQ5_0_X16} reads it.
 *   <li>{@link #Q4_1_X16}, {@link #Q5_1_X16}: the same for q4_1 and q5_1 (320 and 384 bytes per
 *       block of a group): row {@code i}'s {@code d} at {@code 2 * i}, its {@code m} at
 *       {@code 32 + 2 * i}, q5_1's {@code qh} at {@code 64 + 4 * i}, then the nibble pairs (at
 *       {@code 64} for q4_1, {@code 128} for q5_1). {@link QuantOps#interleave} makes them;
 *       {@link MatmulOps#matmulQ4_1_X16} and {@link MatmulOps#matmulQ5_1_X16} read them.
 *   <li>{@link #Q5_K_X16}: the same for q5_K, in tandem's memory only: 176 bytes per 256 values
 *       per row, each group of 16 rows interleaved superblock by superblock. For superblock
 *       {@code b} of the group, its 2816 bytes at {@code b * 2816} from the group's start hold a
 *       256-byte header as {@link #Q4_K_X16}'s (row {@code i}'s {@code d} at {@code 2 * i},
 *       {@code dmin} at {@code 32 + 2 * i}, scale byte {@code k} at {@code 64 + 16 * k + i}), then
 *       its {@code qh} byte {@code l} at {@code 256 + 32 * (l / 2) + 2 * i + l % 2} and its nibble
 *       byte {@code k} at {@code 768 + 32 * (k / 2) + 2 * i + k % 2} (pairs side by side). The last
 *       {@code rows % 16} rows stay in the q5_K layout. {@link QuantOps#interleaveQ5_K} makes it;
 *       {@link MatmulOps#matmulQ5_K_X16} reads it.
 *   <li>{@link #IQ4_NL_X16}: iq4_nl in {@link #Q4_0_X16}'s layout. {@link #IQ4_XS_X16}: iq4_xs, each
 *       group of 16 rows interleaved superblock by superblock, 2176 bytes each: row {@code i}'s
 *       {@code d} at {@code 2 * i}, {@code scales_h} at {@code 32 + 2 * i}, {@code scales_l} at
 *       {@code 64 + 4 * i}, nibble byte {@code k} at {@code 128 + 32 * (k / 2) + 2 * i + k % 2}.
 *       {@link QuantOps#interleave} makes them; {@link MatmulOps#matmulIQ4_NL_X16} and
 *       {@link MatmulOps#matmulIQ4_XS_X16} read them.
 *   <li>{@link #Q2_K_X16}, {@link #Q3_K_X16}: q2_K and q3_K, each group of 16 rows interleaved
 *       superblock by superblock (1344 and 1760 bytes), the per-row bytes side by side and the
 *       quant and mask bytes in pairs, as {@code LowBitsKX16} lays them out.
 *       {@link QuantOps#interleave} makes them; {@link MatmulOps#matmulQ2_K_X16} and
 *       {@link MatmulOps#matmulQ3_K_X16} read them.
 *   <li>{@link #F32_X16}: the same for f32, in tandem's memory only: 4 bytes per value, each group
 *       of 16 rows interleaved value by value: row {@code i}'s value {@code k} at
 *       {@code 64 * k + 4 * i} from the group's start, so one 64-byte load holds value {@code k}
 *       of all 16 rows. The last {@code rows % 16} rows stay in the f32 layout.
 *       {@link QuantOps#interleaveF32} makes it; {@link MatmulOps#matmulF32_X16} reads it.
 *   <li>{@link #F16_X16}, {@link #BF16_X16}: the same for f16 and bf16, 2 bytes per value: row
 *       {@code i}'s value {@code k} at {@code 32 * k + 2 * i}, the last {@code rows % 16} rows in
 *       the file's layout; f16_x16 holds finite values only. {@link QuantOps#interleaveF16} and
 *       {@link QuantOps#interleaveBF16} make them (the first refuses an infinity or NaN);
 *       {@link MatmulOps#matmulF16_X16} and {@link MatmulOps#matmulBF16_X16} read them.
 * </ul>
 */
public enum TensorType {
    F32(0, "f32", 1, 4),
    F16(1, "f16", 1, 2),
    Q4_0(2, "q4_0", 32, 18),
    Q4_1(3, "q4_1", 32, 20),
    Q5_0(6, "q5_0", 32, 22),
    Q5_1(7, "q5_1", 32, 24),
    Q8_0(8, "q8_0", 32, 34),
    Q2_K(10, "q2_K", 256, 84),
    Q3_K(11, "q3_K", 256, 110),
    Q4_K(12, "q4_K", 256, 144),
    Q5_K(13, "q5_K", 256, 176),
    Q6_K(14, "q6_K", 256, 210),
    IQ4_NL(20, "iq4_nl", 32, 18),
    IQ4_XS(23, "iq4_xs", 256, 136),
    BF16(30, "bf16", 1, 2),
    Q4_0_X16(-1, "q4_0_x16", 32, 18),
    Q8_0_X16(-1, "q8_0_x16", 32, 34),
    Q4_K_X16(-1, "q4_K_x16", 256, 144),
    Q6_K_X16(-1, "q6_K_x16", 256, 210),
    Q5_0_X16(-1, "q5_0_x16", 32, 22),
    Q4_1_X16(-1, "q4_1_x16", 32, 20),
    Q5_1_X16(-1, "q5_1_x16", 32, 24),
    Q5_K_X16(-1, "q5_K_x16", 256, 176),
    IQ4_NL_X16(-1, "iq4_nl_x16", 32, 18),
    Q2_K_X16(-1, "q2_K_x16", 256, 84),
    Q3_K_X16(-1, "q3_K_x16", 256, 110),
    IQ4_XS_X16(-1, "iq4_xs_x16", 256, 136),
    F32_X16(-1, "f32_x16", 1, 4),
    F16_X16(-1, "f16_x16", 1, 2),
    BF16_X16(-1, "bf16_x16", 1, 2);

    /** Rows per interleaved group of {@link #Q4_0_X16}. */
    public static final int X16_ROWS = 16;

    /**
     * ggml's names of its type ids (ggml.h {@code enum ggml_type}), so that a checkpoint with a type
     * tandem does not read is reported by name. {@code null} marks an id ggml never assigned.
     */
    private static final String[] GGML_NAMES = {
        "F32", "F16", "Q4_0", "Q4_1", "Q4_2 (removed from ggml)", "Q4_3 (removed from ggml)", "Q5_0", "Q5_1",
        "Q8_0", "Q8_1", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K", "Q8_K", "IQ2_XXS", "IQ2_XS", "IQ3_XXS", "IQ1_S",
        "IQ4_NL", "IQ3_S", "IQ2_S", "IQ4_XS", "I8", "I16", "I32", "I64", "F64", "IQ1_M", "BF16",
        "Q4_0_4_4 (removed from GGUF)", "Q4_0_4_8 (removed from GGUF)", "Q4_0_8_8 (removed from GGUF)", "TQ1_0",
        "TQ2_0", "IQ4_NL_4_4 (removed from GGUF)", "IQ4_NL_4_8 (removed from GGUF)",
        "IQ4_NL_8_8 (removed from GGUF)", "MXFP4", "NVFP4", "Q1_0"
    };

    private static final TensorType[] BY_ID = new TensorType[GGML_NAMES.length];

    static {
        for (TensorType type : values()) {
            if (type.ggmlId >= 0) {
                BY_ID[type.ggmlId] = type;
            }
        }
    }

    private final int ggmlId;
    private final String ggmlName;
    private final int blockSize;
    private final int blockBytes;

    TensorType(int ggmlId, String ggmlName, int blockSize, int blockBytes) {
        this.ggmlId = ggmlId;
        this.ggmlName = ggmlName;
        this.blockSize = blockSize;
        this.blockBytes = blockBytes;
    }

    /**
     * The id of this type in ggml's {@code enum ggml_type}, as GGUF tensor infos store it; {@code -1}
     * for the interleaved layouts ({@link #Q4_0_X16}, {@link #Q4_K_X16}, {@link #Q8_0_X16},
     * {@link #Q6_K_X16}), which no file holds.
     */
    public int ggmlId() {
        return ggmlId;
    }

    /** ggml's name of this type ({@code ggml_type_name}): {@code "f32"}, {@code "q4_K"}, ... */
    public String ggmlName() {
        return ggmlName;
    }

    /** Values per block: 1 for the float types, 32 for q8_0 and q4_0, 256 for the k-quants. */
    public int blockSize() {
        return blockSize;
    }

    /** Bytes per block. */
    public int blockBytes() {
        return blockBytes;
    }

    /** Whether a checkpoint file can hold this type: every type but the in-memory interleaved ones. */
    public boolean inFiles() {
        return ggmlId >= 0;
    }

    /**
     * Whether this is one of tandem's interleaved layouts ({@link #Q4_0_X16}, {@link #Q4_K_X16},
     * {@link #Q8_0_X16}, {@link #Q6_K_X16}, {@link #F32_X16}, {@link #F16_X16}, {@link #BF16_X16}),
     * whose rows are woven together in groups of {@link #X16_ROWS}: a run of values in them is not
     * a run of bytes.
     */
    public boolean isInterleaved() {
        return source() != null;
    }

    /**
     * The interleaved layout a matrix of this type runs in ({@link #Q4_0_X16} for {@link #Q4_0},
     * {@link #Q4_K_X16} for {@link #Q4_K}, {@link #Q8_0_X16} for {@link #Q8_0}, {@link #Q6_K_X16}
     * for {@link #Q6_K}, {@link #F32_X16} for {@link #F32}, {@link #F16_X16} for {@link #F16},
     * {@link #BF16_X16} for {@link #BF16}; {@link QuantOps#interleave} makes it),
     * or {@code null} for a type that runs as stored.
     */
    public TensorType interleaved() {
        return switch (this) {
            case Q4_0 -> Q4_0_X16;
            case Q4_K -> Q4_K_X16;
            case Q8_0 -> Q8_0_X16;
            case Q6_K -> Q6_K_X16;
            case Q5_0 -> Q5_0_X16;
            case Q4_1 -> Q4_1_X16;
            case Q5_1 -> Q5_1_X16;
            case Q5_K -> Q5_K_X16;
            case IQ4_NL -> IQ4_NL_X16;
            case Q2_K -> Q2_K_X16;
            case Q3_K -> Q3_K_X16;
            case IQ4_XS -> IQ4_XS_X16;
            case F32 -> F32_X16;
            case F16 -> F16_X16;
            case BF16 -> BF16_X16;
            default -> null;
        };
    }

    /**
     * The file type an interleaved layout is made from ({@link #Q4_0} for {@link #Q4_0_X16},
     * {@link #Q4_K} for {@link #Q4_K_X16}, {@link #Q8_0} for {@link #Q8_0_X16}, {@link #Q6_K} for
     * {@link #Q6_K_X16}, {@link #F32} for {@link #F32_X16}, {@link #F16} for {@link #F16_X16},
     * {@link #BF16} for {@link #BF16_X16}), or {@code null}
     * for a type that is not interleaved.
     */
    public TensorType source() {
        for (TensorType type : VALUES) {
            if (type.interleaved() == this) {
                return type;
            }
        }
        return null;
    }

    private static final TensorType[] VALUES = values();

    /** Whether values are stored in scaled blocks rather than one float each. */
    public boolean isQuantized() {
        return blockSize > 1;
    }

    /**
     * Bytes of {@code elements} values of this type.
     *
     * @throws IllegalArgumentException if {@code elements} is negative, not a multiple of
     *     {@link #blockSize()}, or its byte count overflows a long
     */
    public long bytes(long elements) {
        return bytesOf("bytes", "elements", elements);
    }

    /**
     * Bytes of one row of {@code cols} values.
     *
     * @throws IllegalArgumentException if {@code cols} is negative or not a multiple of
     *     {@link #blockSize()}
     */
    public long rowBytes(int cols) {
        return bytesOf("rowBytes", "cols", cols);
    }

    private long bytesOf(String method, String name, long elements) {
        if (elements < 0) {
            throw new IllegalArgumentException(this + "." + method + ": " + name + " = " + elements + " must be >= 0");
        }
        if (elements % blockSize != 0) {
            throw new IllegalArgumentException(this + "." + method + ": " + name + " = " + elements
                    + " is not a multiple of the " + this + " block size " + blockSize);
        }
        long blocks = elements / blockSize;
        if (blocks > Long.MAX_VALUE / blockBytes) {
            throw new IllegalArgumentException(this + "." + method + ": " + name + " = " + elements
                    + " is more than a long can count in bytes");
        }
        return blocks * blockBytes;
    }

    /**
     * The type of ggml type id {@code id}.
     *
     * @throws IllegalArgumentException naming the id and, when ggml defines it, ggml's name of it,
     *     if tandem does not read that type
     */
    public static TensorType fromGgmlId(int id) {
        if (id >= 0 && id < BY_ID.length && BY_ID[id] != null) {
            return BY_ID[id];
        }
        throw new IllegalArgumentException(
                "unsupported ggml tensor type " + describeGgmlId(id) + "; tandem reads " + supported());
    }

    /**
     * The type named {@code name}, ignoring case: the constant's name ({@code "Q4_K"}) or ggml's
     * ({@code "q4_K"}).
     *
     * @throws IllegalArgumentException naming the type if tandem does not read it, or saying the name
     *     is not a ggml type
     */
    public static TensorType fromName(String name) {
        if (name == null) {
            throw new IllegalArgumentException("ggml tensor type name is null");
        }
        String upper = name.toUpperCase(Locale.ROOT);
        for (TensorType type : values()) {
            if (type.name().equals(upper) && type.inFiles()) {
                return type;
            }
        }
        for (int id = 0; id < GGML_NAMES.length; id++) {
            if (baseName(GGML_NAMES[id]).equals(upper)) {
                throw new IllegalArgumentException(
                        "unsupported ggml tensor type " + describeGgmlId(id) + "; tandem reads " + supported());
            }
        }
        throw new IllegalArgumentException("'" + name + "' is not a ggml tensor type name");
    }

    /** {@code "Q5_K (13)"} for an id ggml defines, {@code "id 99"} for one it does not. */
    static String describeGgmlId(int id) {
        if (id >= 0 && id < GGML_NAMES.length) {
            String name = GGML_NAMES[id];
            int note = name.indexOf(" (");
            return note < 0
                    ? name + " (" + id + ")"
                    : name.substring(0, note) + " (" + id + ", " + name.substring(note + 2);
        }
        return "id " + id + " (not a ggml type id)";
    }

    private static String baseName(String ggmlName) {
        int note = ggmlName.indexOf(" (");
        return note < 0 ? ggmlName : ggmlName.substring(0, note);
    }

    private static String supported() {
        StringBuilder names = new StringBuilder();
        for (TensorType type : values()) {
            if (!type.inFiles()) {
                continue;
            }
            names.append(names.isEmpty() ? "" : ", ").append(type);
        }
        return names.toString();
    }
}
