package dev.tandem.server;

import dev.tandem.CpuDeviceConfig;
import dev.tandem.Worker;
import dev.tandem.llm.EmbeddedModel;
import dev.tandem.llm.LanguageModel;
import java.net.URI;
import java.time.Duration;
import java.util.function.BooleanSupplier;

/** The embedded model served on loopback for a test class: worker, model, engine, server. */
final class Served implements AutoCloseable {
    final Worker worker;
    final LanguageModel model;
    final Engine engine;
    final TandemServer server;

    private Served(Worker worker, LanguageModel model, Engine engine, TandemServer server) {
        this.worker = worker;
        this.model = model;
        this.engine = engine;
        this.server = server;
    }

    /** Serves the embedded model with a session engine of the default bounds. */
    static Served start() {
        return start(ServerConfig.builder().port(0), b -> b);
    }

    static Served start(ServerConfig.Builder config, java.util.function.UnaryOperator<SessionEngine.Builder> engine) {
        return start(config, engine, java.util.function.UnaryOperator.identity());
    }

    static Served start(ServerConfig.Builder config, java.util.function.UnaryOperator<SessionEngine.Builder> engine,
            java.util.function.UnaryOperator<dev.tandem.TokenStream> streams) {
        Worker worker = Worker.create(CpuDeviceConfig.withCores(2));
        LanguageModel model = LanguageModel.load(worker, EmbeddedModel.path());
        SessionEngine sessionEngine = engine.apply(SessionEngine.builder(worker, model)).build(streams);
        TandemServer server = TandemServer.start(sessionEngine, config.port(0).build());
        return new Served(worker, model, sessionEngine, server);
    }

    URI uri(String path) {
        return URI.create("http://127.0.0.1:" + server.port() + path);
    }

    String baseUrl() {
        return "http://127.0.0.1:" + server.port() + "/v1";
    }

    @Override
    public void close() {
        server.close();
        engine.close();
        worker.close();
    }

    /** Polls {@code condition} until it holds or {@code timeout} passes; whether it held. */
    static boolean eventually(Duration timeout, BooleanSupplier condition) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                return false;
            }
            java.util.concurrent.locks.LockSupport.parkNanos(1_000_000); // a poll interval, not a synchronisation
        }
        return true;
    }

    /**
     * Posts {@code body} to {@code /v1/completions} on a raw socket, reads up to the first event,
     * runs {@code whileStreaming}, then closes the socket without reading on.
     *
     * @return {@link System#nanoTime()} just before the close
     */
    static long streamThenDisconnect(int port, String body, Runnable whileStreaming) throws java.io.IOException {
        try (java.net.Socket socket = new java.net.Socket("127.0.0.1", port)) {
            java.io.OutputStream out = socket.getOutputStream();
            byte[] bytes = body.getBytes(java.nio.charset.StandardCharsets.UTF_8);
            out.write(("POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                    + "Content-Length: " + bytes.length + "\r\n\r\n").getBytes(java.nio.charset.StandardCharsets.US_ASCII));
            out.write(bytes);
            out.flush();
            java.io.BufferedReader in = new java.io.BufferedReader(new java.io.InputStreamReader(socket.getInputStream(),
                    java.nio.charset.StandardCharsets.UTF_8));
            org.assertj.core.api.Assertions.assertThat(in.readLine()).isEqualTo("HTTP/1.1 200 OK");
            String line;
            while ((line = in.readLine()) != null && !line.startsWith("data: ")) {
                // headers
            }
            org.assertj.core.api.Assertions.assertThat(line).startsWith("data: {");
            whileStreaming.run();
            return System.nanoTime();
        }
    }
}
