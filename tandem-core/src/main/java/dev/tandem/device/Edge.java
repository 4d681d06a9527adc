package dev.tandem.device;

/**
 * A link of a task's successor stack (see {@link TaskNode}): the successor it releases and the
 * link below it. Every {@link TaskNode} is also an edge, used for the first predecessor it is
 * wired to, so a task with one predecessor (a chain, most of a DAG) costs no edge allocation.
 * Written by the host before the push that publishes it; read, and cleared, only by the thread
 * that closes the stack.
 */
class Edge {
    TaskNode edgeTask;
    Edge edgeNext;

    Edge(TaskNode task) {
        this.edgeTask = task;
    }
}
