package dev.tandem.server;

import dev.tandem.llm.chat.ToolCall;
import dev.tandem.llm.chat.ToolSyntax;
import java.util.List;

/**
 * A chat reply, as it streams, read for tool calls: text goes out while it cannot be the start
 * of a call in the model's syntax, and is held back while it may be; at the end the held text is
 * either calls or, when it turned out not to be one, content after all. Without tools it passes
 * every piece through at once. One per response; not thread-safe (the handler's thread).
 */
final class ToolCallFilter {
    /** The end of a reply: content not yet sent, and the calls it makes (empty when none). */
    record End(String content, List<ToolCall> calls) {}

    private final ToolSyntax syntax;
    private final boolean active;
    private final boolean parallel;
    private final StringBuilder text = new StringBuilder();
    private int sent;

    ToolCallFilter(ToolSyntax syntax, boolean active, boolean parallel) {
        this.syntax = syntax;
        this.active = active;
        this.parallel = parallel;
    }

    /** Takes the next piece of the reply; returns what may go out now (possibly empty). */
    String accept(String piece) {
        text.append(piece);
        if (active && mayHoldCall()) {
            return "";
        }
        String out = text.substring(sent);
        sent = text.length();
        return out;
    }

    /**
     * Whether the text not yet sent may be (the start of) a call. Only that tail is looked at:
     * text went out only while it could not start one. A Hermes call may open anywhere in a
     * reply; the other syntaxes' calls are the whole reply, so once text went out none follows.
     */
    private boolean mayHoldCall() {
        if (sent > 0 && syntax != ToolSyntax.HERMES) {
            return false;
        }
        return syntax.mayStartCall(text.substring(sent));
    }

    /** The whole reply is in: its calls, and the content still to send. */
    End end() {
        String held = text.substring(sent);
        if (!active) {
            return new End(held, List.of());
        }
        ToolSyntax.Reply reply = syntax.parse(text.toString(), () -> "call_" + CompletionsApi.randomId());
        if (reply.calls().isEmpty()) {
            return new End(held, List.of());
        }
        List<ToolCall> calls = parallel ? reply.calls() : reply.calls().subList(0, 1);
        // Content the reply holds besides its calls that was not sent yet (text before a call was).
        String rest = reply.content().length() > sent ? reply.content().substring(sent) : "";
        return new End(rest, calls);
    }

    /** The whole reply read at once (an answer that is not streamed). */
    static End whole(String reply, ToolSyntax syntax, boolean active, boolean parallel) {
        ToolCallFilter filter = new ToolCallFilter(syntax, active, parallel);
        filter.text.append(reply);
        return filter.end();
    }
}
