package dev.tandem.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tandem.server.TandemServer;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** {@code tandem serve} on the embedded model: the line it prints, a streamed chat, and its shutdown. */
@Timeout(120)
class ServeCommandTest {

    @Test
    void printsWhereItListensAndAnswersAStreamingChat() throws Exception {
        CompletableFuture<TandemServer> started = new CompletableFuture<>();
        ServeCommand.onStart = started::complete;
        try {
            CompletableFuture<CliRun.Run> run = CompletableFuture.supplyAsync(
                    () -> CliRun.execute("serve", "--port", "0", "--cores", "2", "--api-key", "k", "--alias",
                            "gpt-4o-mini", "--strict-model-name", "--cors-origin", "http://localhost:3000"));
            TandemServer server = started.get(90, TimeUnit.SECONDS);
            int port = server.port();
            HttpClient http = HttpClient.newHttpClient();
            HttpResponse<String> response = http.send(HttpRequest.newBuilder(
                            URI.create("http://127.0.0.1:" + port + "/v1/chat/completions"))
                    .header("Authorization", "Bearer k")
                    .POST(HttpRequest.BodyPublishers.ofString("""
                            {"model":"gpt-4o-mini","messages":[{"role":"user","content":"Tell me a story"}],
                             "max_tokens":24,"stream":true}""")).build(), HttpResponse.BodyHandlers.ofString());
            assertThat(response.statusCode()).isEqualTo(200);
            assertThat(response.body()).startsWith("data: {").contains("chat.completion.chunk")
                    .contains("\"model\":\"gpt-4o-mini\"").endsWith("data: [DONE]\n\n");
            HttpResponse<String> other = http.send(HttpRequest.newBuilder(
                            URI.create("http://127.0.0.1:" + port + "/chat/completions"))
                    .header("Authorization", "Bearer k").header("Origin", "http://localhost:3000")
                    .POST(HttpRequest.BodyPublishers.ofString(
                            "{\"model\":\"gpt-4\",\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}]}"))
                    .build(), HttpResponse.BodyHandlers.ofString());
            assertThat(other.statusCode()).isEqualTo(404); // strict names
            assertThat(other.headers().firstValue("access-control-allow-origin")).hasValue("http://localhost:3000");
            server.close();
            CliRun.Run result = run.get(30, TimeUnit.SECONDS);
            assertThat(result.exitCode()).isZero();
            assertThat(result.out()).isEqualTo("listening on http://127.0.0.1:" + port + System.lineSeparator());
        } finally {
            ServeCommand.onStart = null;
        }
    }

    /** A KV cache type other than f16 and f32 is a usage error that names both, before any model loads. */
    @Test
    void anUnknownKvTypeIsAUsageErrorNamingTheAllowedOnes() {
        CliRun.Run result = CliRun.execute("serve", "--port", "0", "--kv-type", "q8_0");
        assertThat(result.exitCode()).isEqualTo(2);
        assertThat(result.err()).contains("--kv-type").contains("expected one of f16, f32 but was 'q8_0'");
    }

    @Test
    void aMalformedCorsOriginIsAUsageError() {
        CliRun.Run result = CliRun.execute("serve", "--port", "0", "--cors-origin", "localhost:3000");
        assertThat(result.exitCode()).isEqualTo(2);
        assertThat(result.err()).contains("CORS origin");
    }

    @Test
    void theBatchSizeIsTheStepsRowsAndMustExceedTheBatch() {
        ServeCommand command = new ServeCommand();
        new picocli.CommandLine(command).parseArgs("-b", "64", "--max-batch", "8", "--no-prefix-cache",
                "--prompt-rows", "32");
        dev.tandem.llm.BatcherConfig config = command.batcher().build();
        assertThat(config.tokenBudget()).isEqualTo(64);
        assertThat(config.promptRows()).isEqualTo(32);
        ServeCommand defaults = new ServeCommand();
        new picocli.CommandLine(defaults).parseArgs();
        assertThat(defaults.batcher().build().promptRows()).isEqualTo(64);
        assertThat(defaults.batcher().build().tokenBudget()).isEqualTo(256);
        assertThat(config.maxBatch()).isEqualTo(8);
        assertThat(config.prefixCache()).isFalse();
        CliRun.Run result = CliRun.execute("serve", "--port", "0", "--batch-size", "16", "--max-batch", "16");
        assertThat(result.exitCode()).isEqualTo(2);
        assertThat(result.err()).contains("--batch-size 16, --max-batch 16 and --prompt-rows 64: tokenBudget = 16 must"
                + " exceed maxBatch = 16");
        result = CliRun.execute("serve", "--port", "0", "--prompt-rows", "-1");
        assertThat(result.exitCode()).isEqualTo(2);
        assertThat(result.err()).contains("promptRows = -1 must be >= 0");
    }

    /** An option that sizes the batcher is refused with --no-batching, not ignored. */
    @Test
    void batcherOptionsWithoutTheBatcherAreUsageErrors() {
        for (String[] option : new String[][] {{"--batch-size", "64"}, {"--prompt-rows", "32"}, {"--kv-cells", "4096"},
                {"--no-prefix-cache"}}) {
            String[] args = new String[3 + option.length];
            args[0] = "serve";
            args[1] = "--port";
            args[2] = "0";
            System.arraycopy(option, 0, args, 3, option.length);
            String[] withFlag = java.util.Arrays.copyOf(args, args.length + 1);
            withFlag[args.length] = "--no-batching";
            CliRun.Run result = CliRun.execute(withFlag);
            assertThat(result.exitCode()).as(String.join(" ", withFlag)).isEqualTo(2);
            assertThat(result.err()).contains(option[0] + " sizes the continuous batcher, which --no-batching turns off");
        }
    }
}
