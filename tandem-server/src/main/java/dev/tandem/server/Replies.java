package dev.tandem.server;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.helidon.common.media.type.MediaTypes;
import io.helidon.http.HeaderNames;
import io.helidon.http.HttpMediaType;
import io.helidon.webserver.http.ServerRequest;
import io.helidon.webserver.http.ServerResponse;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * How the server reads a JSON body and writes a JSON answer or an error. Every error it writes is
 * OpenAI's error object, is counted in {@code /metrics} by status and code, and is logged: at
 * INFO the first time each (status, code) occurs, at DEBUG every time, so a client refused for
 * a reason nobody expected shows up in the log once without a refusal storm flooding it.
 */
final class Replies {
    private static final Logger log = LoggerFactory.getLogger(Replies.class);
    static final ObjectMapper JSON = new ObjectMapper();
    private static final HttpMediaType APPLICATION_JSON = HttpMediaType.create(MediaTypes.APPLICATION_JSON);

    private final ServerConfig config;
    private final ServerMetrics metrics;
    private final Set<String> logged = ConcurrentHashMap.newKeySet();

    Replies(ServerConfig config, ServerMetrics metrics) {
        this.config = config;
        this.metrics = metrics;
    }

    /** The body as JSON, read with a bound: never more than {@code maxBodyBytes + 1} bytes. */
    JsonNode readBody(ServerRequest req) {
        int max = config.maxBodyBytes();
        OptionalLong length = req.headers().contentLength();
        if (length.isPresent() && length.getAsLong() > max) {
            throw tooLarge(length.getAsLong());
        }
        byte[] bytes;
        try (InputStream in = req.content().inputStream()) {
            bytes = in.readNBytes(max + 1);
        } catch (IOException | UncheckedIOException e) {
            throw ApiException.badParameter(null, "cannot read the request body: " + e.getMessage());
        }
        if (bytes.length > max) {
            throw tooLarge(-1);
        }
        return parseJson(bytes);
    }

    /**
     * A body's JSON: UTF-8 only (strictly decoded, so Jackson's guess of UTF-16 or UTF-32 from the
     * first bytes never applies), any syntax error a 400.
     */
    static JsonNode parseJson(byte[] bytes) {
        if (bytes.length == 0) {
            throw ApiException.badParameter(null, "the request body is empty; send a JSON object");
        }
        String text;
        try {
            text = StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(bytes)).toString();
        } catch (CharacterCodingException e) {
            throw ApiException.badParameter(null, "the request body is not valid UTF-8");
        }
        try {
            return JSON.readTree(text);
        } catch (JsonProcessingException e) {
            throw ApiException.badParameter(null, "malformed JSON: " + e.getOriginalMessage());
        }
    }

    private ApiException tooLarge(long length) {
        return new ApiException(413, "invalid_request_error", null, "request_too_large",
                "the request body" + (length >= 0 ? " of " + length + " bytes" : "") + " is larger than "
                        + config.maxBodyBytes() + " bytes");
    }

    /** OpenAI's error object for {@code e}. */
    static ObjectNode errorBody(ApiException e) {
        ObjectNode body = JSON.createObjectNode();
        ObjectNode error = body.putObject("error").put("message", e.getMessage()).put("type", e.type());
        if (e.param() == null) {
            error.putNull("param");
        } else {
            error.put("param", e.param());
        }
        error.put("code", e.code());
        return body;
    }

    /** Counts and logs the refusal {@code e} of {@code req} (also for one sent inside a stream). */
    void refused(ServerRequest req, ApiException e) {
        metrics.refused(e.status(), e.code());
        String what = req.prologue().method().text() + " " + req.path().path();
        if (logged.add(e.status() + " " + e.code())) {
            log.info("refused {} with {} {}: {} (logged once per status and code; /metrics counts every one)", what,
                    e.status(), e.code(), e.getMessage());
        } else {
            log.debug("refused {} with {} {}: {}", what, e.status(), e.code(), e.getMessage());
        }
    }

    /** Answers {@code req} with the error {@code e}: its status, OpenAI's error object, counted and logged. */
    void error(ServerRequest req, ServerResponse res, ApiException e) {
        refused(req, e);
        res.status(e.status());
        if (e.retryLater()) {
            res.header(HeaderNames.RETRY_AFTER, Long.toString(Math.max(1, config.retryAfter().toSeconds())));
        }
        json(res, errorBody(e));
    }

    static void json(ServerResponse res, JsonNode body) {
        res.headers().contentType(APPLICATION_JSON);
        try {
            res.send(JSON.writeValueAsBytes(body));
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }

    static byte[] bytes(JsonNode node) {
        try {
            return JSON.writeValueAsBytes(node);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }
}
