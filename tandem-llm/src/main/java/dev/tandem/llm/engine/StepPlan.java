package dev.tandem.llm.engine;

/**
 * One step as the {@link Scheduler} planned it: its rows (prompt chunks first, then one row per
 * decoding sequence), each row's position and block table, and the sequence whose token each
 * sampled column is. Immutable once returned; the delivery reads {@link #sequence} in column order.
 */
public final class StepPlan {
    final int rows;
    final int prefill;
    final int decode;
    final int[] position;
    final int[][] tables;
    final int[] prefillTokens;
    final int[] decodeSlots;
    final int[] logitRows;
    private final Sequence[] sequences;
    int columns;

    StepPlan(int rows, int prefill, int decode) {
        this.rows = rows;
        this.prefill = prefill;
        this.decode = decode;
        this.position = new int[rows];
        this.tables = new int[rows][];
        this.prefillTokens = new int[prefill];
        this.decodeSlots = new int[decode];
        this.logitRows = new int[rows];
        this.sequences = new Sequence[rows];
    }

    void add(int column, int row, Sequence s) {
        logitRows[column] = row;
        sequences[column] = s;
        s.built++;
    }

    /** Rows of the step's forward pass. */
    public int rows() {
        return rows;
    }

    /** Rows that are prompt tokens. */
    public int prefillRows() {
        return prefill;
    }

    /** Rows that decode a sequence's next token. */
    public int decodeRows() {
        return decode;
    }

    /** Sampled tokens of the step: one per decoding row and per prompt that ends in it. */
    public int columns() {
        return columns;
    }

    /** The sequence whose token is column {@code i}. */
    public Sequence sequence(int i) {
        return sequences[i];
    }

    @Override
    public String toString() {
        return "StepPlan[rows " + rows + " (prefill " + prefill + ", decode " + decode + "), columns " + columns + "]";
    }
}
