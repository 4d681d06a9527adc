package dev.tandem.llm;

import dev.tandem.Outcome;
import dev.tandem.StreamTerminatedException;
import dev.tandem.Token;
import dev.tandem.TokenStream;
import dev.tandem.llm.model.LlamaRequest;
import dev.tandem.llm.sampling.TextStreamer;
import dev.tandem.llm.sampling.TokenLogprobs;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;

/**
 * The text of one generation as it streams: each generated token with the text it completes.
 * A delta's text is always valid UTF-8 ending on a character boundary (a character split across
 * tokens arrives with the token that completes it) and never holds the start of a stop string
 * before it is clear that the string does not follow (the held text comes with a later delta).
 *
 * <p>It ends at the model's end-of-sequence token (or a control token that ends a chat turn,
 * {@link LanguageModel#endsGeneration}) or a stop string ({@link FinishReason#STOP},
 * neither included in the text), at the token limit ({@link FinishReason#LENGTH}), or when the
 * request ends otherwise ({@link FinishReason#ABORTED}: cancelled, past its deadline, failed;
 * see {@link #outcome()}). Ending early cancels the request, so the device stops working on it.
 * One reader at a time.
 */
public final class Completion implements Iterable<Completion.Delta> {

    /**
     * One generated token and the text it adds.
     *
     * @param token the token id
     * @param text  text completed by this token (may be empty: an incomplete character, or text
     *              held back as a possible stop string)
     * @param logprobs the token's log-probabilities when the options asked for them
     *              ({@link GenerateOptions#logprobs()}), else null; null too for the flush delta of
     *              held-back text (token -1)
     */
    public record Delta(int token, String text, TokenLogprobs logprobs) {
        /** A delta without log-probabilities. */
        public Delta(int token, String text) {
            this(token, text, null);
        }
    }

    private final LanguageModel model;
    private final TokenStream stream;
    private final int[] prompt;
    private final GenerateOptions options;
    private final TextStreamer decoder;
    private final List<Integer> tokens = new ArrayList<>();
    private final List<TokenLogprobs> logprobs = new ArrayList<>();
    private final StringBuilder text = new StringBuilder();
    private final int limit;
    private FinishReason finish;
    private String stopString;
    private Outcome outcome;
    private boolean iterated;
    private volatile int cachedPromptTokens;

    Completion(LanguageModel model, TokenStream stream, int[] prompt, GenerateOptions options) {
        this.model = model;
        this.stream = stream;
        this.prompt = prompt.clone();
        this.options = options;
        this.decoder = new TextStreamer(model.tokenizer()::tokenBytes, options.stop());
        this.limit = model.limits().maxTokens(prompt.length, options.maxTokens());
    }

    /**
     * Prompt tokens whose keys and values came from the prefix cache instead of being computed
     * (OpenAI's {@code usage.prompt_tokens_details.cached_tokens}); final once the first token
     * is out, 0 for an engine without a prefix cache.
     */
    public int cachedPromptTokens() {
        return cachedPromptTokens;
    }

    void cachedPromptTokens(int tokens) {
        cachedPromptTokens = tokens;
    }

    public TokenStream stream() {
        return stream;
    }

    /** The prompt's tokens, BOS included where the model adds one. */
    public int[] promptTokens() {
        return prompt.clone();
    }

    /** The generated tokens so far; the EOS token that ended a completion is not among them. */
    public int[] tokens() {
        return tokens.stream().mapToInt(Integer::intValue).toArray();
    }

    /**
     * The log-probabilities of {@link #tokens()}, one per token in the same order, when the options
     * asked for them; else empty.
     */
    public List<TokenLogprobs> logprobs() {
        return List.copyOf(logprobs);
    }

    /** The text so far. */
    public String text() {
        return text.toString();
    }

    /** Why it ended, or null while it runs. */
    public FinishReason finishReason() {
        return finish;
    }

    /** The stop string that ended it, or null. */
    public String stopString() {
        return stopString;
    }

    /** The request's outcome, once it has ended (null before). */
    public Outcome outcome() {
        return outcome;
    }

    /** Ends the completion from any thread: the request is cancelled and iteration ends ABORTED. */
    public void cancel() {
        stream.cancel();
    }

    /** Reads everything and returns the text. */
    public String await() {
        for (Delta ignored : this) {
            // drain
        }
        return text();
    }

    /** The deltas; iterable once. */
    @Override
    public Iterator<Delta> iterator() {
        if (iterated) {
            throw new IllegalStateException("a completion is iterable once");
        }
        iterated = true;
        Iterator<Token> source = stream.iterator();
        return new Iterator<>() {
            private Delta next;
            private boolean flushed;

            @Override
            public boolean hasNext() {
                if (next != null) {
                    return true;
                }
                if (finish != null) {
                    return flush();
                }
                try {
                    while (source.hasNext()) {
                        Token t = source.next();
                        int token = t.asInts()[0];
                        if (token == LlamaRequest.FINISHED) {
                            continue;
                        }
                        TokenLogprobs lp = options.logprobs() < 0 ? null
                                : TokenLogprobs.readFrom(MemorySegment.ofArray(t.bytes()), Integer.BYTES);
                        SequenceLimits.Verdict verdict = model.limits().after(token, tokens.size() + 1, limit,
                                options.ignoreEos());
                        if (verdict == SequenceLimits.Verdict.END_OF_GENERATION) {
                            end(FinishReason.STOP);
                            next = new Delta(token, "", lp);
                            return true;
                        }
                        tokens.add(token);
                        if (lp != null) {
                            logprobs.add(lp);
                        }
                        String delta = decoder.accept(token);
                        text.append(delta);
                        if (decoder.stopped()) {
                            stopString = decoder.stopString();
                            end(FinishReason.STOP);
                        } else if (verdict == SequenceLimits.Verdict.LENGTH) {
                            end(FinishReason.LENGTH);
                        }
                        next = new Delta(token, delta, lp);
                        return true;
                    }
                    // The request completed: its token limit.
                    end(FinishReason.LENGTH);
                } catch (StreamTerminatedException e) {
                    if (finish == null) {
                        finish = FinishReason.ABORTED;
                        outcome = e.outcome();
                    }
                }
                return flush();
            }

            /** After the end: the text still held back, once, as a delta of no token. */
            private boolean flush() {
                if (flushed) {
                    return false;
                }
                flushed = true;
                if (outcome == null) {
                    outcome = stream.completion().join();
                }
                String rest = decoder.stopped() ? "" : decoder.finish();
                if (rest.isEmpty()) {
                    return false;
                }
                text.append(rest);
                next = new Delta(-1, rest);
                return true;
            }

            @Override
            public Delta next() {
                if (!hasNext()) {
                    throw new NoSuchElementException();
                }
                Delta d = next;
                next = null;
                return d;
            }
        };
    }

    private void end(FinishReason reason) {
        finish = reason;
        if (!stream.isDone()) {
            stream.cancel();
        }
        outcome = stream.completion().join();
    }
}
