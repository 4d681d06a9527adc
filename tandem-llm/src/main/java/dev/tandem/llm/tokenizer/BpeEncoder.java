package dev.tandem.llm.tokenizer;

import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.PriorityQueue;

/**
 * Byte-level BPE encoding of one text fragment: split it into words with the pre-tokenizer, write
 * each word's UTF-8 bytes as byte-level characters, then merge the adjacent pair of lowest merge
 * rank (leftmost first on a tie) until no pair has a merge, and write each symbol's token.
 *
 * <p>A priority queue of candidate pairs keeps this O(n log n) in a word's length; a pair whose
 * symbols changed since it was queued is skipped when it comes up.
 */
final class BpeEncoder {
    private final Map<String, Integer> ids;
    private final Map<String, Integer> ranks;
    private final PreTokenizer preTokenizer;

    BpeEncoder(Vocabulary vocabulary, Map<String, Integer> ids, PreTokenizer preTokenizer) {
        this.ids = ids;
        this.preTokenizer = preTokenizer;
        List<String> merges = vocabulary.merges();
        this.ranks = new HashMap<>(merges.size() * 2);
        for (int rank = 0; rank < merges.size(); rank++) {
            String merge = merges.get(rank);
            int space = merge.indexOf(' ', 1);
            if (space < 0) {
                throw new IllegalArgumentException("merge " + rank + " '" + merge + "' is not 'left right'");
            }
            ranks.putIfAbsent(merge, rank); // the key a pair looks up: left + " " + right
        }
    }

    private record Pair(int left, int right, int rank, int length) {}

    void encode(String text, TokenIds out) {
        for (String word : preTokenizer.split(text)) {
            String symbols = ByteLevel.encode(word.getBytes(StandardCharsets.UTF_8));
            if (preTokenizer.ignoresMerges()) {
                Integer whole = ids.get(symbols);
                if (whole != null) {
                    out.add(whole);
                    continue;
                }
            }
            merge(symbols, out);
        }
    }

    private void merge(String word, TokenIds out) {
        int n = word.length(); // byte-level characters are all in the BMP: one char each
        int[] length = new int[n];
        int[] next = new int[n];
        int[] prev = new int[n];
        for (int i = 0; i < n; i++) {
            length[i] = 1;
            prev[i] = i - 1;
            next[i] = i + 1 < n ? i + 1 : -1;
        }
        PriorityQueue<Pair> queue = new PriorityQueue<>(Math.max(1, n), (a, b) -> a.rank != b.rank
                ? Integer.compare(a.rank, b.rank) : Integer.compare(a.left, b.left));
        for (int i = 1; i < n; i++) {
            offer(queue, word, length, i - 1, i);
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
                offer(queue, word, length, prev[l], l);
            }
            if (next[l] >= 0) {
                offer(queue, word, length, l, next[l]);
            }
        }
        for (int i = 0; i >= 0 && n > 0; i = next[i]) {
            String piece = word.substring(i, i + length[i]);
            Integer id = ids.get(piece);
            if (id != null) {
                out.add(id);
                continue;
            }
            // Not a token (a vocabulary without some byte, or a merge without its token): llama.cpp
            // writes the characters that are tokens by themselves and drops the rest.
            for (int c = 0; c < piece.length(); c++) {
                char ch = piece.charAt(c);
                Integer single = ch < 0x80 ? ids.get(String.valueOf(ch)) : null; // bytes of UTF-8, as llama.cpp
                if (single != null) {
                    out.add(single);
                }
            }
        }
    }

    private void offer(PriorityQueue<Pair> queue, String word, int[] length, int l, int r) {
        String left = word.substring(l, l + length[l]);
        String right = word.substring(r, r + length[r]);
        Integer rank = ranks.get(left + " " + right);
        if (rank != null) {
            queue.add(new Pair(l, r, rank, length[l] + length[r]));
        }
    }
}
