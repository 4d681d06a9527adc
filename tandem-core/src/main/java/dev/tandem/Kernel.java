package dev.tandem;

import java.util.Objects;

/**
 * A named function that runs one task on one core, reading and writing the task's regions.
 *
 * <p>A kernel may throw: the exception fails the task's request only, and the core goes on.
 */
public interface Kernel {

    /** The name shown in errors and traces. */
    String name();

    void run(TaskContext context) throws Exception;

    /** The body of a kernel made with {@link #of}. */
    @FunctionalInterface
    interface Body {
        void run(TaskContext context) throws Exception;
    }

    /** A kernel from a name and a body. */
    static Kernel of(String name, Body body) {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(body, "body");
        return new Kernel() {
            @Override
            public String name() {
                return name;
            }

            @Override
            public void run(TaskContext context) throws Exception {
                body.run(context);
            }

            @Override
            public String toString() {
                return name;
            }
        };
    }
}
