package dev.tandem.llm.gguf;

/** The value types of GGUF metadata, with the numbers the file stores. */
public enum GgufValueType {
    UINT8(0, 1),
    INT8(1, 1),
    UINT16(2, 2),
    INT16(3, 2),
    UINT32(4, 4),
    INT32(5, 4),
    FLOAT32(6, 4),
    BOOL(7, 1),
    STRING(8, 8),
    ARRAY(9, 12),
    UINT64(10, 8),
    INT64(11, 8),
    FLOAT64(12, 8);

    private final int id;
    private final int minBytes;

    GgufValueType(int id, int minBytes) {
        this.id = id;
        this.minBytes = minBytes;
    }

    /** The number the file stores for this type. */
    public int id() {
        return id;
    }

    /** The fewest bytes a value of this type takes in the file (a string's or array's header). */
    public int minBytes() {
        return minBytes;
    }

    /** Whether it is one of the eight integer types. */
    public boolean integer() {
        return switch (this) {
            case UINT8, INT8, UINT16, INT16, UINT32, INT32, UINT64, INT64 -> true;
            default -> false;
        };
    }

    /** The type numbered {@code id}, or {@code null}. */
    static GgufValueType byId(long id) {
        for (GgufValueType type : values()) {
            if (type.id == id) {
                return type;
            }
        }
        return null;
    }
}
