package dev.tandem.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tandem.llm.chat.ToolSyntax;
import org.junit.jupiter.api.Test;

/** What a stream sends of a reply that may hold tool calls, piece by piece. */
class ToolCallFilterTest {

    @Test
    void hermesTextGoesOutUntilATagMayOpenThenTheCallIsHeldAndRead() {
        ToolCallFilter f = new ToolCallFilter(ToolSyntax.HERMES, true, true);
        assertThat(f.accept("Sure. ")).isEqualTo("Sure. ");
        assertThat(f.accept("<tool")).isEmpty();
        assertThat(f.accept("_call>{\"name\": \"f\", \"arguments\": {\"a\": 1}}")).isEmpty();
        assertThat(f.accept("</tool_call>")).isEmpty();
        ToolCallFilter.End end = f.end();
        assertThat(end.calls()).singleElement().satisfies(c -> {
            assertThat(c.name()).isEqualTo("f");
            assertThat(c.arguments()).isEqualTo("{\"a\":1}");
        });
        assertThat(end.content()).isEmpty();
    }

    @Test
    void aPartialTagThatTurnsOutToBeTextIsReleased() {
        ToolCallFilter f = new ToolCallFilter(ToolSyntax.HERMES, true, true);
        assertThat(f.accept("Use <tool")).isEmpty(); // the piece ends in what may open a tag: held
        assertThat(f.accept("s> wisely.")).isEqualTo("Use <tools> wisely.");
        assertThat(f.end()).isEqualTo(new ToolCallFilter.End("", java.util.List.of()));
    }

    @Test
    void aGenericReplyThatStartsAsTextIsNeverHeldAgain() {
        ToolCallFilter f = new ToolCallFilter(ToolSyntax.GENERIC, true, true);
        assertThat(f.accept(" ")).isEmpty(); // whitespace may still open a call
        assertThat(f.accept("Once")).isEqualTo(" Once");
        assertThat(f.accept(" {\"name\": \"f\"}")).isEqualTo(" {\"name\": \"f\"}");
        assertThat(f.end().calls()).isEmpty();
    }

    @Test
    void withoutToolsEveryPiecePassesAtOnce() {
        ToolCallFilter f = new ToolCallFilter(ToolSyntax.GENERIC, false, true);
        assertThat(f.accept("{\"name\": \"f\", \"arguments\": {}}")).isEqualTo("{\"name\": \"f\", \"arguments\": {}}");
        assertThat(f.end().calls()).isEmpty();
    }
}
