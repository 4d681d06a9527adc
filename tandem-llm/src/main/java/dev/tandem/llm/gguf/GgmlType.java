package dev.tandem.llm.gguf;

/**
 * The tensor types of ggml, as GGUF numbers them: the name, the elements per block and the bytes
 * per block of each. The reader knows every type's size so that it can check that each tensor
 * lies inside the file, whether or not a kernel exists for the type; which types a model can
 * run is the loader's business, and it names the type it cannot.
 *
 * @param id         the ggml type id stored in the file
 * @param name       ggml's name of the type, e.g. {@code Q4_K}
 * @param blockSize  elements per block (1 for the plain types)
 * @param blockBytes bytes per block
 */
public record GgmlType(int id, String name, int blockSize, int blockBytes) {

    private static final GgmlType[] BY_ID = new GgmlType[64];

    static {
        define(0, "F32", 1, 4);
        define(1, "F16", 1, 2);
        define(2, "Q4_0", 32, 18);
        define(3, "Q4_1", 32, 20);
        define(6, "Q5_0", 32, 22);
        define(7, "Q5_1", 32, 24);
        define(8, "Q8_0", 32, 34);
        define(9, "Q8_1", 32, 36);
        define(10, "Q2_K", 256, 84);
        define(11, "Q3_K", 256, 110);
        define(12, "Q4_K", 256, 144);
        define(13, "Q5_K", 256, 176);
        define(14, "Q6_K", 256, 210);
        define(15, "Q8_K", 256, 292);
        define(16, "IQ2_XXS", 256, 66);
        define(17, "IQ2_XS", 256, 74);
        define(18, "IQ3_XXS", 256, 98);
        define(19, "IQ1_S", 256, 50);
        define(20, "IQ4_NL", 32, 18);
        define(21, "IQ3_S", 256, 110);
        define(22, "IQ2_S", 256, 82);
        define(23, "IQ4_XS", 256, 136);
        define(24, "I8", 1, 1);
        define(25, "I16", 1, 2);
        define(26, "I32", 1, 4);
        define(27, "I64", 1, 8);
        define(28, "F64", 1, 8);
        define(29, "IQ1_M", 256, 56);
        define(30, "BF16", 1, 2);
        define(34, "TQ1_0", 256, 54);
        define(35, "TQ2_0", 256, 66);
        define(39, "MXFP4", 32, 17);
    }

    public static final GgmlType F32 = BY_ID[0];
    public static final GgmlType F16 = BY_ID[1];
    public static final GgmlType Q4_0 = BY_ID[2];
    public static final GgmlType Q4_1 = BY_ID[3];
    public static final GgmlType Q5_0 = BY_ID[6];
    public static final GgmlType Q5_1 = BY_ID[7];
    public static final GgmlType Q8_0 = BY_ID[8];
    public static final GgmlType Q2_K = BY_ID[10];
    public static final GgmlType Q3_K = BY_ID[11];
    public static final GgmlType Q4_K = BY_ID[12];
    public static final GgmlType Q5_K = BY_ID[13];
    public static final GgmlType Q6_K = BY_ID[14];
    public static final GgmlType IQ4_NL = BY_ID[20];
    public static final GgmlType IQ4_XS = BY_ID[23];
    public static final GgmlType BF16 = BY_ID[30];

    private static void define(int id, String name, int blockSize, int blockBytes) {
        BY_ID[id] = new GgmlType(id, name, blockSize, blockBytes);
    }

    /** The type numbered {@code id}, or {@code null} when ggml has no such type (or tandem does not know it). */
    public static GgmlType byId(long id) {
        return id >= 0 && id < BY_ID.length ? BY_ID[(int) id] : null;
    }

    /** The type named {@code name} (ggml's spelling, any case), or {@code null}. */
    public static GgmlType byName(String name) {
        for (GgmlType type : BY_ID) {
            if (type != null && type.name.equalsIgnoreCase(name)) {
                return type;
            }
        }
        return null;
    }

    /**
     * Bytes of a row of {@code elements} values; {@code -1} when the count is not a multiple of
     * the block size (the caller names the tensor in its error).
     */
    public long rowBytes(long elements) {
        if (elements % blockSize != 0) {
            return -1;
        }
        return Math.multiplyExact(elements / blockSize, (long) blockBytes);
    }

    @Override
    public String toString() {
        return name + " (" + id + ")";
    }
}
