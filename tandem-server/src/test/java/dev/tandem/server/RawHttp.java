package dev.tandem.server;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * HTTP/1.1 exchanged byte for byte over a socket, so that a test sends exactly the headers a
 * real client sends (in its order and case) and sees exactly what the server writes: the status
 * line, the headers, and the body with its chunked framing removed.
 */
final class RawHttp {
    private RawHttp() {}

    /** A response as read off the wire; header names lower-cased. */
    record Response(int status, Map<String, String> headers, String body) {
        String header(String name) {
            return headers.get(name.toLowerCase(Locale.ROOT));
        }
    }

    /**
     * Sends {@code method path} with {@code headers} (each {@code "Name: value"}, as given) and
     * {@code body} (with its Content-Length), and reads one response.
     */
    static Response exchange(int port, String method, String path, List<String> headers, String body)
            throws IOException {
        try (Socket socket = new Socket("127.0.0.1", port)) {
            socket.setSoTimeout(60_000);
            byte[] content = body == null ? new byte[0] : body.getBytes(StandardCharsets.UTF_8);
            StringBuilder head = new StringBuilder(method + " " + path + " HTTP/1.1\r\n");
            for (String h : headers) {
                head.append(h).append("\r\n");
            }
            if (body != null) {
                head.append("Content-Length: ").append(content.length).append("\r\n");
            }
            head.append("\r\n");
            OutputStream out = socket.getOutputStream();
            out.write(head.toString().getBytes(StandardCharsets.US_ASCII));
            out.write(content);
            out.flush();
            return read(socket.getInputStream());
        }
    }

    private static Response read(InputStream in) throws IOException {
        String status = line(in);
        String[] parts = status.split(" ", 3);
        Map<String, String> headers = new LinkedHashMap<>();
        for (String h = line(in); !h.isEmpty(); h = line(in)) {
            int colon = h.indexOf(':');
            headers.put(h.substring(0, colon).trim().toLowerCase(Locale.ROOT), h.substring(colon + 1).trim());
        }
        ByteArrayOutputStream body = new ByteArrayOutputStream();
        if ("chunked".equalsIgnoreCase(headers.get("transfer-encoding"))) {
            for (int size = Integer.parseInt(line(in).split(";")[0].trim(), 16); size > 0;
                    size = Integer.parseInt(line(in).split(";")[0].trim(), 16)) {
                body.write(in.readNBytes(size));
                line(in); // the CRLF after the chunk
            }
            for (String trailer = line(in); !trailer.isEmpty(); trailer = line(in)) {
                // trailers: none expected
            }
        } else if (headers.containsKey("content-length")) {
            body.write(in.readNBytes(Integer.parseInt(headers.get("content-length"))));
        }
        return new Response(Integer.parseInt(parts[1]), headers, body.toString(StandardCharsets.UTF_8));
    }

    private static String line(InputStream in) throws IOException {
        ByteArrayOutputStream line = new ByteArrayOutputStream();
        for (int b = in.read(); b != '\n'; b = in.read()) {
            if (b < 0) {
                throw new IOException("the connection closed mid-line: '" + line + "'");
            }
            if (b != '\r') {
                line.write(b);
            }
        }
        return line.toString(StandardCharsets.US_ASCII);
    }
}
