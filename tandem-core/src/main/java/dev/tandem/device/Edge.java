package dev.tandem.device;

/**
 * A link of a task's successor stack (see {@link TaskNode}). Every {@link TaskNode} is itself
 * the link for the first predecessor it is wired to, so a task with one predecessor (a chain,
 * most of a DAG) costs no allocation for its edge; each later wiring pushes a {@link To}.
 * {@code edgeNext} is written by the host before the push that publishes the link, and read and
 * cleared only by the thread that closes the stack.
 */
class Edge {
    Edge edgeNext;

    /** A link to a successor that is already its own link in another predecessor's stack. */
    static final class To extends Edge {
        final TaskNode task;

        To(TaskNode task) {
            this.task = task;
        }
    }
}
