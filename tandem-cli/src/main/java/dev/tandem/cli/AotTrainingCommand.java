package dev.tandem.cli;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import picocli.CommandLine.Command;

/**
 * {@code tandem aot-training} (hidden): the run the launcher records the JVM's ahead-of-time cache
 * from, so the classes and profiles of what users start most are in it. The demo, then a server
 * on the embedded model, on a free loopback port, asked what a client of the OpenAI API asks
 * (models, a streamed and a plain chat, a text completion, the metrics), then closed. Before the
 * server was part of it, {@code tandem serve} loaded Helidon, Micrometer, Jackson and Jinjava
 * from their jars at every start: about a second and a half of the time to ready.
 */
@Command(name = "aot-training", hidden = true,
        description = "The run the launcher's ahead-of-time cache is recorded from: the demo and a short served session.")
final class AotTrainingCommand implements Callable<Integer> {

    private static final List<String> CHATS = List.of(
            "{\"messages\":[{\"role\":\"user\",\"content\":\"Tell me a story\"}],\"max_tokens\":16,\"stream\":true}",
            "{\"messages\":[{\"role\":\"user\",\"content\":\"Once upon a time\"}],\"max_tokens\":16}");

    @Override
    public Integer call() throws Exception {
        int demo = Main.execute("demo");
        if (demo != 0) {
            return demo;
        }
        CompletableFuture<Void> session = new CompletableFuture<>();
        ServeCommand.onStart = server -> Thread.ofVirtual().name("tandem-aot-client").start(() -> {
            try {
                exercise(server.port());
                session.complete(null);
            } catch (Exception e) {
                session.completeExceptionally(e);
            } finally {
                server.close();
            }
        });
        int serve;
        try {
            serve = Main.execute("serve", "--port", "0");
        } finally {
            ServeCommand.onStart = null;
        }
        if (serve != 0) {
            return serve;
        }
        try {
            session.join();
            return 0;
        } catch (CompletionException e) {
            System.err.println("tandem: the training session failed: " + e.getCause());
            return 1;
        }
    }

    /** Asks the server on {@code port} what clients ask; a failed request fails the training run. */
    private static void exercise(int port) throws Exception {
        String base = "http://127.0.0.1:" + port;
        try (HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build()) {
            get(http, base + "/v1/models");
            for (String chat : CHATS) {
                post(http, base + "/v1/chat/completions", chat);
            }
            post(http, base + "/v1/completions", "{\"prompt\":\"Once\",\"max_tokens\":8,\"stream\":true}");
            get(http, base + "/metrics");
        }
    }

    private static void get(HttpClient http, String url) throws Exception {
        check(url, http.send(HttpRequest.newBuilder(URI.create(url)).build(), HttpResponse.BodyHandlers.ofString()));
    }

    private static void post(HttpClient http, String url, String body) throws Exception {
        check(url, http.send(HttpRequest.newBuilder(URI.create(url)).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString()));
    }

    private static void check(String url, HttpResponse<String> response) {
        if (response.statusCode() != 200) {
            throw new IllegalStateException(url + " answered " + response.statusCode() + ": " + response.body());
        }
    }
}
