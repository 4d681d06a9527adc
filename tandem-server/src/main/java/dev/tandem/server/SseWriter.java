package dev.tandem.server;

import com.fasterxml.jackson.databind.JsonNode;
import io.helidon.common.media.type.MediaTypes;
import io.helidon.http.HeaderNames;
import io.helidon.http.HttpMediaType;
import io.helidon.webserver.http.ServerResponse;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One response's server-sent events, written straight to the response's output stream.
 *
 * <p>A {@code "stream": true} request is answered {@code text/event-stream} whatever its
 * {@code Accept} header says, as OpenAI's server and llama-server do: the official SDKs send
 * {@code Accept: application/json} on every request, streams included, so a server that
 * negotiated the sink from that header would refuse every SDK stream. Each event is written
 * with its blank line and flushed at once.
 *
 * <p>The handler's thread writes the events; a virtual thread writes a keep-alive comment
 * whenever nothing was written for {@code keepAlive}, so that a client gone while its request
 * produces nothing (queued, or a long prefill) is found out: its write fails, {@code onGone}
 * runs (the server cancels the request) and {@link #clientGone()} turns true. Writes are
 * serialised by {@code lock}; the heartbeat only tries it (the handler writing is proof enough
 * of life) and stops once {@code closed} is set, which {@link #close} does before it takes the
 * lock to close the stream. A failed write by the handler throws {@link UncheckedIOException}.
 */
final class SseWriter implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(SseWriter.class);
    private static final HttpMediaType EVENT_STREAM = HttpMediaType.create(MediaTypes.TEXT_EVENT_STREAM);
    private static final byte[] DATA = "data: ".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] EVENT = "event: ".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] KEEP_ALIVE = ": keep-alive\n\n".getBytes(StandardCharsets.US_ASCII);

    private final OutputStream out;
    private final Runnable onGone;
    private final Duration keepAlive;
    private final ReentrantLock lock = new ReentrantLock();
    private final Thread heartbeat;
    private volatile long lastWrite = System.nanoTime();
    private volatile boolean closed;
    private volatile boolean clientGone;

    /** Sends the 200 and the event-stream headers, and starts the heartbeat. */
    SseWriter(ServerResponse res, Duration keepAlive, Runnable onGone) {
        this.onGone = onGone;
        this.keepAlive = keepAlive;
        res.status(200);
        res.headers().contentType(EVENT_STREAM);
        res.header(HeaderNames.CACHE_CONTROL, "no-cache");
        res.header("X-Accel-Buffering", "no"); // a reverse proxy in front must not hold events back
        this.out = res.outputStream();
        this.heartbeat = Thread.ofVirtual().name("tandem-server-keepalive").start(this::beat);
    }

    /** Whether the heartbeat found the client gone (and ran {@code onGone}). */
    boolean clientGone() {
        return clientGone;
    }

    /** One {@code data:} event holding {@code json}. */
    void data(JsonNode json) {
        write(null, Replies.bytes(json));
    }

    /** One {@code data:} event holding {@code payload} as it is (e.g. {@code [DONE]}). */
    void data(String payload) {
        write(null, payload.getBytes(StandardCharsets.UTF_8));
    }

    /** One event named {@code type} ({@code event: type}) holding {@code json}. */
    void event(String type, JsonNode json) {
        write(type, Replies.bytes(json));
    }

    private void write(String type, byte[] payload) {
        lock.lock();
        try {
            if (type != null) {
                out.write(EVENT);
                out.write(type.getBytes(StandardCharsets.UTF_8));
                out.write('\n');
            }
            out.write(DATA);
            out.write(payload);
            out.write('\n');
            out.write('\n');
            out.flush();
            lastWrite = System.nanoTime();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } finally {
            lock.unlock();
        }
    }

    private void beat() {
        long interval = keepAlive.toNanos();
        while (!closed) {
            long wait = lastWrite + interval - System.nanoTime();
            if (wait > 0) {
                LockSupport.parkNanos(wait); // a timer: woken early only by close()
                continue;
            }
            if (!lock.tryLock()) {
                LockSupport.parkNanos(interval);
                continue;
            }
            try {
                if (closed) {
                    return;
                }
                out.write(KEEP_ALIVE);
                out.flush();
                lastWrite = System.nanoTime();
            } catch (IOException | RuntimeException e) {
                clientGone = true;
                onGone.run();
                log.debug("client gone while its request waited: {}", e.toString());
                return;
            } finally {
                lock.unlock();
            }
        }
    }

    /** Stops the heartbeat and ends the response. */
    @Override
    public void close() {
        closed = true;
        LockSupport.unpark(heartbeat);
        lock.lock();
        try {
            out.close();
        } catch (IOException | RuntimeException e) {
            log.debug("closing an event stream: {}", e.toString());
        } finally {
            lock.unlock();
        }
    }
}
