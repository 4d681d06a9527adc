package dev.tandem.llm.grammar;

/** For tests outside this package: the text of a random schema of {@link RandomSchemas}. */
public final class RandomSchemasAccess {
    private final RandomSchemas schemas;

    public RandomSchemasAccess(long seed) {
        this.schemas = new RandomSchemas(seed);
    }

    public String root() {
        return schemas.root().toString();
    }
}
