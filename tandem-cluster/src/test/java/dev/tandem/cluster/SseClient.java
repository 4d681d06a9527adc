package dev.tandem.cluster;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.BufferedInputStream;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;

/**
 * A streaming {@code /v1/completions} client on a raw socket with a small receive buffer, so that
 * while it does not read, its stream is held back (the server's writes block, the gateway stops
 * pulling, the worker's member waits). It decodes the chunked body and the SSE events itself.
 */
final class SseClient implements AutoCloseable {
    private static final ObjectMapper JSON = new ObjectMapper();

    private final Socket socket = new Socket();
    private final DataInputStream in;
    private final StringBuilder pending = new StringBuilder();
    final StringBuilder text = new StringBuilder();
    String finish;
    String error;
    boolean done;
    private int status = -1;
    private boolean chunked;

    private SseClient(int port, String body) throws IOException {
        socket.setReceiveBufferSize(2048);
        socket.connect(new InetSocketAddress("127.0.0.1", port));
        socket.getOutputStream().write(("POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                + "Content-Type: application/json\r\nContent-Length: " + body.getBytes(StandardCharsets.UTF_8).length
                + "\r\n\r\n" + body).getBytes(StandardCharsets.UTF_8));
        socket.getOutputStream().flush();
        in = new DataInputStream(new BufferedInputStream(socket.getInputStream()));
    }

    /** Sends the request; nothing is read yet. */
    static SseClient post(int port, String body) throws IOException {
        return new SseClient(port, body);
    }

    /** The response's status, once its head has arrived (a stream's head comes with its first event). */
    int status() throws IOException {
        if (status < 0) {
            String line = line();
            status = Integer.parseInt(line.split(" ")[1]);
            String header;
            while (!(header = line()).isEmpty()) {
                chunked |= header.equalsIgnoreCase("transfer-encoding: chunked");
            }
        }
        return status;
    }

    private String line() throws IOException {
        StringBuilder b = new StringBuilder();
        int c;
        while ((c = in.read()) != '\n') {
            if (c < 0) {
                throw new EOFException("the response ended inside a line");
            }
            if (c != '\r') {
                b.append((char) c);
            }
        }
        return b.toString();
    }

    /** Reads until {@code n} more events arrived; false at the end of the body. */
    boolean readEvents(int n) throws IOException {
        if (status() != 200 || !chunked) {
            throw new IllegalStateException("not a stream: HTTP " + status);
        }
        int seen = 0;
        while (seen < n) {
            int size = Integer.parseInt(line().trim(), 16);
            if (size == 0) {
                return false;
            }
            pending.append(new String(in.readNBytes(size), StandardCharsets.UTF_8));
            line();
            int end;
            while ((end = pending.indexOf("\n\n")) >= 0) {
                String event = pending.substring(0, end);
                pending.delete(0, end + 2);
                if (event.startsWith("data: ")) {
                    event(event.substring(6));
                    seen++;
                }
            }
        }
        return true;
    }

    private void event(String data) throws IOException {
        if (data.equals("[DONE]")) {
            done = true;
            return;
        }
        JsonNode json = JSON.readTree(data);
        if (json.has("error")) {
            error = json.get("error").toString();
            return;
        }
        JsonNode choices = json.path("choices");
        if (!choices.isEmpty()) {
            text.append(choices.get(0).path("text").asText(""));
            if (choices.get(0).hasNonNull("finish_reason")) {
                finish = choices.get(0).get("finish_reason").asText();
            }
        }
    }

    /** Reads the stream to its end and closes the connection. */
    void readAll() throws IOException {
        while (readEvents(1)) {
            // to the end
        }
        close();
    }

    @Override
    public void close() throws IOException {
        socket.close();
    }
}
