package dev.tandem.llm.tokenizer;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import java.util.Set;

/**
 * Text to token ids and back, for a SentencePiece-style or byte-level BPE {@link Vocabulary}, as
 * llama.cpp tokenizes: the same ids for the same text, test vector for test vector.
 *
 * <p>Encoding first splits special tokens out of the text (llama.cpp's {@code tokenizer_st_partition}):
 * user-defined tokens always, control and unknown tokens when asked to parse specials, the longest
 * pieces first. The algorithm then runs on each piece of text between them.
 *
 * <p>Immutable and thread-safe.
 */
public final class Tokenizer {
    /** Pieces llama.cpp treats as control tokens whatever type the file gives them (end-of-turn and fill-in-middle markers). */
    private static final Set<String> CONTROL_BY_TEXT = Set.of(
            "<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|end_of_text|>", "<EOT>",
            "_<EOT>", "<|eom_id|>", "</s>", "<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<PRE>", "<|fim_suffix|>",
            "<fim-suffix>", "<fim_suffix>", "<SUF>", "<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<MID>",
            "<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<reponame>",
            "<|file_sep|>");

    private final Vocabulary vocabulary;
    private final TokenType[] types;
    private final Map<String, Integer> ids;
    private final int[] specials; // split out of text, longest piece first
    private final byte[][] bytes; // each token's piece as text bytes
    private final SpmEncoder spm;
    private final BpeEncoder bpe;

    private Tokenizer(Vocabulary vocabulary) {
        this.vocabulary = vocabulary;
        int n = vocabulary.size();
        List<String> tokens = vocabulary.tokens();
        this.ids = new HashMap<>(n * 2);
        this.types = new TokenType[n];
        for (int id = 0; id < n; id++) {
            String piece = tokens.get(id);
            if (piece.isEmpty()) {
                throw new IllegalArgumentException("token " + id + " is empty");
            }
            Integer before = ids.putIfAbsent(piece, id);
            if (before != null) {
                throw new IllegalArgumentException("token '" + piece + "' appears twice, as " + before + " and " + id);
            }
            TokenType type = vocabulary.tokenType(id);
            types[id] = CONTROL_BY_TEXT.contains(piece) && type != TokenType.UNUSED ? TokenType.CONTROL : type;
        }
        List<Integer> special = new ArrayList<>();
        for (int id = 0; id < n; id++) {
            if (types[id].special()) {
                special.add(id);
            }
        }
        special.sort(Comparator.comparingInt((Integer id) -> -tokens.get(id).length()).thenComparingInt(id -> id));
        this.specials = special.stream().mapToInt(Integer::intValue).toArray();
        if (vocabulary.kind() == ModelKind.SPM) {
            this.spm = new SpmEncoder(vocabulary, ids);
            this.bpe = null;
        } else {
            this.spm = null;
            this.bpe = new BpeEncoder(vocabulary, ids, PreTokenizer.named(vocabulary.preTokenizer()));
        }
        this.bytes = new byte[n][];
        for (int id = 0; id < n; id++) {
            bytes[id] = pieceBytes(id, tokens.get(id));
        }
    }

    /**
     * The tokenizer of a vocabulary.
     *
     * @throws IllegalArgumentException for an empty or duplicate token, or a byte-level BPE vocabulary
     *                                  whose pre-tokenizer is unknown, naming it
     */
    public static Tokenizer of(Vocabulary vocabulary) {
        return new Tokenizer(vocabulary);
    }

    public Vocabulary vocabulary() {
        return vocabulary;
    }

    /** The number of tokens. */
    public int vocabSize() {
        return types.length;
    }

    /** Beginning of sequence, -1 for none. */
    public int bos() {
        return vocabulary.bosId();
    }

    /** End of sequence, -1 for none. */
    public int eos() {
        return vocabulary.eosId();
    }

    /** The vocabulary's piece of a token, as the file writes it ({@code ▁Hello}, {@code ĠHello}, {@code <0x0A>}). */
    public String piece(int id) {
        checkId(id);
        return vocabulary.tokens().get(id);
    }

    /** The type of a token, as the tokenizer treats it. */
    public TokenType tokenType(int id) {
        checkId(id);
        return types[id];
    }

    /** The id of a piece, as the file writes it. */
    public OptionalInt id(String piece) {
        Integer id = ids.get(piece);
        return id == null ? OptionalInt.empty() : OptionalInt.of(id);
    }

    /**
     * The token ids of {@code text}.
     *
     * @param addBos       add the special tokens the vocabulary asks for ({@link Vocabulary#addBos()}: BOS
     *                     first, {@link Vocabulary#addEos()}: EOS last), as llama.cpp's {@code add_special}
     * @param parseSpecial whether the text of control tokens (such as {@code <|begin_of_text|>}) stands
     *                     for the token; user-defined tokens stand for themselves either way
     */
    public int[] encode(String text, boolean addBos, boolean parseSpecial) {
        TokenIds out = new TokenIds();
        if (addBos && vocabulary.addBos()) {
            out.add(vocabulary.bosId());
        }
        boolean afterSpecial = true; // the start of the text counts as following a special token
        for (Fragment fragment : partition(text, parseSpecial)) {
            if (fragment.token >= 0) {
                out.add(fragment.token);
                afterSpecial = true;
                continue;
            }
            String raw = text.substring(fragment.start, fragment.end);
            if (spm != null) {
                String prefixed = vocabulary.addSpacePrefix() && afterSpecial ? " " + raw : raw;
                spm.encode(prefixed.replace(' ', '\u2581'), out);
            } else {
                bpe.encode(raw, out);
            }
            afterSpecial = false;
        }
        if (addBos && vocabulary.addEos()) {
            out.add(vocabulary.eosId());
        }
        return out.toArray();
    }

    /**
     * The text of token ids, special tokens shown as their pieces, as llama.cpp detokenizes with
     * {@code unparse_special}: the concatenated {@link #tokenBytes} as UTF-8 (malformed bytes as
     * U+FFFD) less, when the vocabulary adds a space prefix, the leading space of the first token.
     *
     * <p>It does not clean up spaces before punctuation (llama.cpp's {@code clean_spaces} for
     * GPT-2 and Llama 3 vocabularies), so that decoding gives back the text that was encoded.
     *
     * @throws IllegalArgumentException for an id outside the vocabulary
     */
    public String decode(int[] tokenIds) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (int i = 0; i < tokenIds.length; i++) {
            checkId(tokenIds[i]);
            byte[] b = bytes[tokenIds[i]];
            int skip = i == 0 && vocabulary.addSpacePrefix() && b.length > 0 && b[0] == ' ' ? 1 : 0;
            out.write(b, skip, b.length - skip);
        }
        return out.toString(StandardCharsets.UTF_8);
    }

    /**
     * The raw bytes of a token's piece in the text, for streaming output: a character's UTF-8 may be
     * split across tokens. Special tokens give their piece; unused tokens give nothing.
     *
     * @throws IllegalArgumentException for an id outside the vocabulary
     */
    public byte[] tokenBytes(int id) {
        checkId(id);
        return bytes[id].clone();
    }

    private void checkId(int id) {
        if (id < 0 || id >= types.length) {
            throw new IllegalArgumentException("token id " + id + " is outside the vocabulary of " + types.length
                    + " tokens");
        }
    }

    private byte[] pieceBytes(int id, String piece) {
        TokenType type = types[id];
        if (type.special()) {
            return piece.getBytes(StandardCharsets.UTF_8);
        }
        if (type == TokenType.BYTE) {
            if (piece.length() == 6 && piece.startsWith("<0x") && piece.endsWith(">")) {
                return new byte[] {(byte) Integer.parseInt(piece.substring(3, 5), 16)};
            }
            return piece.getBytes(StandardCharsets.UTF_8);
        }
        if (type != TokenType.NORMAL) {
            return new byte[0]; // unused and undefined tokens show nothing, as in llama.cpp
        }
        if (vocabulary.kind() == ModelKind.SPM) {
            return piece.replace('\u2581', ' ').getBytes(StandardCharsets.UTF_8);
        }
        ByteArrayOutputStream out = new ByteArrayOutputStream(piece.length());
        for (int i = 0; i < piece.length(); ) {
            int cp = piece.codePointAt(i);
            int b = ByteLevel.byteOf(cp);
            if (b >= 0) {
                out.write(b);
            } else {
                out.writeBytes(Character.toString(cp).getBytes(StandardCharsets.UTF_8)); // not a byte character
            }
            i += Character.charCount(cp);
        }
        return out.toByteArray();
    }

    /** A special token ({@code token >= 0}) or the text {@code [start, end)} between them. */
    private record Fragment(int token, int start, int end) {}

    private List<Fragment> partition(String text, boolean parseSpecial) {
        List<Fragment> fragments = new ArrayList<>();
        if (text.isEmpty()) {
            return fragments;
        }
        fragments.add(new Fragment(-1, 0, text.length()));
        for (int special : specials) {
            TokenType type = types[special];
            if (!parseSpecial && type != TokenType.USER_DEFINED) {
                continue;
            }
            String piece = vocabulary.tokens().get(special);
            if (!text.contains(piece)) {
                continue;
            }
            List<Fragment> split = new ArrayList<>(fragments.size() + 2);
            for (Fragment fragment : fragments) {
                if (fragment.token >= 0) {
                    split.add(fragment);
                    continue;
                }
                int from = fragment.start;
                while (true) {
                    int match = text.indexOf(piece, from, fragment.end);
                    if (match < 0) {
                        break;
                    }
                    if (match > from) {
                        split.add(new Fragment(-1, from, match));
                    }
                    split.add(new Fragment(special, match, match + piece.length()));
                    from = match + piece.length();
                }
                if (from < fragment.end) {
                    split.add(new Fragment(-1, from, fragment.end));
                }
            }
            fragments = split;
        }
        return fragments;
    }
}
