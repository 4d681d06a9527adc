package dev.tandem.llm.tokenizer;

import java.util.Arrays;

/** A growable list of token ids. */
final class TokenIds {
    private int[] ids = new int[16];
    private int size;

    void add(int id) {
        if (size == ids.length) {
            ids = Arrays.copyOf(ids, size * 2);
        }
        ids[size++] = id;
    }

    int[] toArray() {
        return Arrays.copyOf(ids, size);
    }
}
