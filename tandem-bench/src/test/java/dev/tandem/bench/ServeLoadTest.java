package dev.tandem.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The bench's own HTTP client reads what servers send, and its workloads send what they say. */
class ServeLoadTest {

    private static List<String> lines(String response) throws Exception {
        ServeLoad.HttpBody body = new ServeLoad.HttpBody(new ByteArrayInputStream(response.getBytes(StandardCharsets.UTF_8)));
        List<String> out = new ArrayList<>();
        out.add(body.headerLine());
        String line;
        while ((line = body.line()) != null) {
            out.add(line);
        }
        return out;
    }

    @Test
    void aChunkedEventStreamIsReadAcrossChunkBoundariesThatSplitLines() throws Exception {
        String events = "data: {\"a\":1}\n\ndata: [DONE]\n\n";
        // chunks of 5, 9 and the rest: a line split across three chunks
        String chunked = "5\r\n" + events.substring(0, 5) + "\r\n" + "9\r\n" + events.substring(5, 14) + "\r\n"
                + Integer.toHexString(events.length() - 14) + ";ext=1\r\n" + events.substring(14) + "\r\n0\r\n\r\n";
        assertThat(lines("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
                + chunked)).containsExactly("HTTP/1.1 200 OK", "data: {\"a\":1}", "", "data: [DONE]", "");
    }

    @Test
    void aPlainBodyIsReadToItsLengthOrToTheEndOfTheConnection() throws Exception {
        // a kept-alive connection: the bytes after the body's length are never read
        assertThat(lines("HTTP/1.1 400 Bad Request\r\nContent-Length: 10\r\n\r\n{\"e\":\"x\"}\nHTTP/1.1 200"))
                .containsExactly("HTTP/1.1 400 Bad Request", "{\"e\":\"x\"}");
        assertThat(lines("HTTP/1.1 200 OK\r\n\r\nno length\nat all"))
                .containsExactly("HTTP/1.1 200 OK", "no length", "at all");
    }

    @Test
    void workloadsSendUniqueSharedAndGrowingPrompts() {
        ServeLoad.Prompts unique = new ServeLoad.Prompts(ServeLoad.Workload.UNIQUE, 3, 9);
        assertThat(unique.next()).startsWith("9 3 1 ").isNotEqualTo(unique.next());
        assertThat(new ServeLoad.Prompts(ServeLoad.Workload.UNIQUE, 3, 10).next())
                .as("another run, other prompts").doesNotStartWith("9 3 1 ");

        ServeLoad.Prompts shared = new ServeLoad.Prompts(ServeLoad.Workload.SHARED_PREFIX, 0, 1);
        String a = shared.next();
        String b = new ServeLoad.Prompts(ServeLoad.Workload.SHARED_PREFIX, 1, 1).next();
        assertThat(a).startsWith(ServeLoad.SYSTEM).isNotEqualTo(b);
        assertThat(b).startsWith(ServeLoad.SYSTEM);

        ServeLoad.Prompts chat = new ServeLoad.Prompts(ServeLoad.Workload.MULTI_TURN, 2, 1);
        String first = chat.next();
        chat.reply(" a reply");
        String second = chat.next();
        assertThat(second).startsWith(first + " a reply User: ");
        for (int turn = 3; turn <= 6; turn++) {
            chat.next();
        }
        assertThat(chat.next()).as("a new conversation after six turns").doesNotStartWith(first);
    }

    @Test
    void tandemsFirstTokenPhasesAreReadFromItsMetrics() throws Exception {
        String metrics = "# HELP x\ntandem_engine_first_tokens_total 4.0\n"
                + "tandem_engine_first_token_queue_seconds_total 0.5\n"
                + "tandem_engine_first_token_schedule_seconds_total{a=\"b\"} 1.5\n"
                + "tandem_engine_first_token_step_seconds_total 2.0\n";
        ServeLoad.HttpBody body = new ServeLoad.HttpBody(new ByteArrayInputStream(
                ("HTTP/1.1 200 OK\r\n\r\n" + metrics).getBytes(StandardCharsets.UTF_8)));
        body.headerLine();
        assertThat(ServeBench.parseFirstTokenTotals(body)).containsExactly(4.0, 0.5, 1.5, 2.0);
        ServeLoad.HttpBody none = new ServeLoad.HttpBody(new ByteArrayInputStream(
                "HTTP/1.1 200 OK\r\n\r\nllamacpp:tokens 3\n".getBytes(StandardCharsets.UTF_8)));
        none.headerLine();
        assertThat(ServeBench.parseFirstTokenTotals(none)).isNull();
    }

    @Test
    void workloadsAreNamedAsOnTheCommandLine() {
        assertThat(ServeLoad.Workload.of("shared-prefix")).isEqualTo(ServeLoad.Workload.SHARED_PREFIX);
        assertThatThrownBy(() -> ServeLoad.Workload.of("chat")).hasMessageContaining("unique, shared-prefix, multi-turn");
    }
}
