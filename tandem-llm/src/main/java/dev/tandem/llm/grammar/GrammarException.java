package dev.tandem.llm.grammar;

/**
 * A grammar or JSON Schema that tandem cannot compile: a keyword it does not support, a malformed
 * schema, or one that accepts no finite value. The message names the keyword and where it is (a
 * JSON pointer into the schema), so a server can answer with a 400 that says what to change.
 */
public final class GrammarException extends IllegalArgumentException {
    private final String keyword;
    private final String path;

    /**
     * @param keyword the schema keyword at fault ({@code pattern}, {@code $ref}, ...), or null
     * @param path    a JSON pointer to the schema object holding it ({@code ""} for the root)
     * @param message what is wrong, for a user
     */
    public GrammarException(String keyword, String path, String message) {
        super(message + (path == null ? "" : " (at " + (path.isEmpty() ? "the schema's root" : path) + ")"));
        this.keyword = keyword;
        this.path = path;
    }

    /** The keyword at fault, or null when the fault is not one keyword's. */
    public String keyword() {
        return keyword;
    }

    /** A JSON pointer to the schema object at fault ({@code ""}: the root), or null. */
    public String path() {
        return path;
    }
}
