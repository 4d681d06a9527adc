package dev.tandem.llm.tokenizer;

import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.PriorityQueue;

/**
 * SentencePiece-style encoding of one text fragment, whose spaces are already {@code ▁}: start from
 * one symbol per character, merge the adjacent pair whose concatenation is the token of highest
 * score (leftmost first on a tie) until no pair is a token, then write each symbol's token, or its
 * UTF-8 bytes as {@code <0xNN>} tokens when it is none.
 *
 * <p>A priority queue of candidate pairs keeps this O(n log n) in the fragment's length; a pair
 * whose symbols changed since it was queued is skipped when it comes up.
 */
final class SpmEncoder {
    private final Vocabulary vocabulary;
    private final Map<String, Integer> ids;
    private final int[] byteIds = new int[256];

    SpmEncoder(Vocabulary vocabulary, Map<String, Integer> ids) {
        this.vocabulary = vocabulary;
        this.ids = ids;
        for (int b = 0; b < 256; b++) {
            Integer id = ids.get(String.format("<0x%02X>", b));
            if (id == null && b < 0x80) {
                id = ids.get(String.valueOf((char) b)); // a vocabulary without byte tokens: the character itself
            }
            byteIds[b] = id == null ? -1 : id;
        }
    }

    private record Pair(int left, int right, float score, int length) {}

    void encode(String text, TokenIds out) {
        int n = text.codePointCount(0, text.length());
        if (n == 0) {
            return;
        }
        int[] start = new int[n];
        int[] length = new int[n]; // in chars; 0 once merged into the symbol on its left
        int[] next = new int[n];
        int[] prev = new int[n];
        for (int i = 0, at = 0; i < n; i++) {
            start[i] = at;
            length[i] = Character.charCount(text.codePointAt(at));
            at += length[i];
            prev[i] = i - 1;
            next[i] = i + 1 < n ? i + 1 : -1;
        }
        PriorityQueue<Pair> queue = new PriorityQueue<>(Math.max(1, n), (a, b) -> a.score != b.score
                ? Float.compare(b.score, a.score) : Integer.compare(a.left, b.left));
        for (int i = 1; i < n; i++) {
            offer(queue, text, start, length, i - 1, i);
        }
        while (!queue.isEmpty()) {
            Pair pair = queue.poll();
            int l = pair.left;
            int r = pair.right;
            if (length[l] == 0 || length[r] == 0 || length[l] + length[r] != pair.length) {
                continue; // stale: one of its symbols merged since
            }
            length[l] += length[r];
            length[r] = 0;
            next[l] = next[r];
            if (next[r] >= 0) {
                prev[next[r]] = l;
            }
            if (prev[l] >= 0) {
                offer(queue, text, start, length, prev[l], l);
            }
            if (next[l] >= 0) {
                offer(queue, text, start, length, l, next[l]);
            }
        }
        for (int i = 0; i >= 0; i = next[i]) {
            String piece = text.substring(start[i], start[i] + length[i]);
            Integer id = ids.get(piece);
            if (id != null) {
                out.add(id);
                continue;
            }
            for (byte b : piece.getBytes(StandardCharsets.UTF_8)) {
                int byteId = byteIds[b & 0xFF];
                if (byteId < 0) {
                    byteId = vocabulary.unkId();
                }
                if (byteId < 0) {
                    throw new IllegalArgumentException(String.format(
                            "vocabulary has no token for byte 0x%02X and no unknown token", b & 0xFF));
                }
                out.add(byteId);
            }
        }
    }

    private void offer(PriorityQueue<Pair> queue, String text, int[] start, int[] length, int l, int r) {
        int len = length[l] + length[r];
        Integer id = ids.get(text.substring(start[l], start[l] + len));
        if (id != null) {
            queue.add(new Pair(l, r, vocabulary.score(id), len));
        }
    }
}
