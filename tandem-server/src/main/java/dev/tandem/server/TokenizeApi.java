package dev.tandem.server;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.tandem.llm.tokenizer.Tokenizer;
import io.helidon.webserver.http.ServerRequest;
import io.helidon.webserver.http.ServerResponse;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;

/**
 * llama-server's {@code POST /tokenize} and {@code /detokenize}, which tools built for it use to
 * count and split text:
 *
 * <ul>
 *   <li>{@code /tokenize} takes {@code content} (a string), {@code add_special} (BOS where the
 *       vocabulary adds one; default false), {@code parse_special} (special-token text becomes
 *       its token; default true) and {@code with_pieces} (default false), and answers
 *       {@code {"tokens": [ids]}}, or with pieces {@code {"tokens": [{"id", "piece"}]}} where a
 *       piece is its text when its bytes are valid UTF-8 and the list of its bytes otherwise;</li>
 *   <li>{@code /detokenize} takes {@code tokens} (ids) and answers {@code {"content": text}}.</li>
 * </ul>
 *
 * <p>Both take an optional {@code model}, resolved as a completion's is ({@link ModelNames}): on a
 * server routing several models it picks the vocabulary, and a name none serves is a 404.
 */
final class TokenizeApi {
    private final ModelNames names;
    private final Replies replies;

    TokenizeApi(ModelNames names, Replies replies) {
        this.names = names;
        this.replies = replies;
    }

    /** The tokenizer of the body's {@code model} (the own model's without one). */
    private Tokenizer tokenizer(JsonNode body) {
        JsonNode model = body.get("model");
        if (model != null && !model.isNull() && !model.isTextual()) {
            throw ApiException.badParameter("model", "model must be a string");
        }
        return names.resolve(model == null || model.isNull() ? null : model.asText()).model().tokenizer();
    }

    void tokenize(ServerRequest req, ServerResponse res) {
        try {
            JsonNode body = object(replies.readBody(req));
            Tokenizer tokenizer = tokenizer(body);
            JsonNode content = body.get("content");
            if (content == null || !content.isTextual()) {
                throw ApiException.badParameter("content", "content must be a string");
            }
            int[] ids = tokenizer.encode(content.asText(), flag(body, "add_special", false),
                    flag(body, "parse_special", true));
            ObjectNode answer = Replies.JSON.createObjectNode();
            ArrayNode tokens = answer.putArray("tokens");
            boolean withPieces = flag(body, "with_pieces", false);
            for (int id : ids) {
                if (!withPieces) {
                    tokens.add(id);
                    continue;
                }
                ObjectNode token = tokens.addObject().put("id", id);
                byte[] bytes = tokenizer.tokenBytes(id);
                String text = utf8(bytes);
                if (text != null) {
                    token.put("piece", text);
                } else {
                    ArrayNode piece = token.putArray("piece");
                    for (byte b : bytes) {
                        piece.add(b & 0xff);
                    }
                }
            }
            Replies.json(res, answer);
        } catch (ApiException e) {
            replies.error(req, res, e);
        }
    }

    void detokenize(ServerRequest req, ServerResponse res) {
        try {
            JsonNode body = object(replies.readBody(req));
            Tokenizer tokenizer = tokenizer(body);
            JsonNode tokens = body.get("tokens");
            if (tokens == null || !tokens.isArray()) {
                throw ApiException.badParameter("tokens", "tokens must be an array of token ids");
            }
            int[] ids = new int[tokens.size()];
            for (int i = 0; i < ids.length; i++) {
                JsonNode t = tokens.get(i);
                if (!t.isIntegralNumber() || !t.canConvertToInt() || t.intValue() < 0
                        || t.intValue() >= tokenizer.vocabSize()) {
                    throw ApiException.badParameter("tokens", "tokens[" + i + "] is not a token id in [0, "
                            + tokenizer.vocabSize() + ")");
                }
                ids[i] = t.intValue();
            }
            Replies.json(res, Replies.JSON.createObjectNode().put("content", tokenizer.decode(ids)));
        } catch (ApiException e) {
            replies.error(req, res, e);
        }
    }

    private static JsonNode object(JsonNode body) {
        if (!body.isObject()) {
            throw ApiException.badParameter(null, "the request body must be a JSON object");
        }
        return body;
    }

    private static boolean flag(JsonNode body, String name, boolean fallback) {
        JsonNode n = body.get(name);
        if (n == null || n.isNull()) {
            return fallback;
        }
        if (!n.isBoolean()) {
            throw ApiException.badParameter(name, name + " must be a boolean");
        }
        return n.booleanValue();
    }

    /** The text of {@code bytes}, or null when they are not valid UTF-8 on their own. */
    private static String utf8(byte[] bytes) {
        try {
            return StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(bytes)).toString();
        } catch (CharacterCodingException e) {
            return null;
        }
    }
}
