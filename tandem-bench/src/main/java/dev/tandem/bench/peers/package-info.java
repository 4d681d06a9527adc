/**
 * The side-by-side peers of {@code tandem bench overhead}: the same synthetic task DAG run by
 * tandem (which infers the edges from region accesses), by {@code CompletableFuture}s on a
 * {@code ForkJoinPool}, and by a oneTBB flow graph.
 *
 * <p>{@link dev.tandem.bench.peers.SyntheticDag} holds one DAG in both forms; its explicit form is
 * computed by a plain reference inference, so every harness runs exactly the same edges.
 * {@link dev.tandem.bench.peers.ForkJoinPeer} and {@link dev.tandem.bench.peers.TbbPeer} report
 * nanoseconds per task, the best of several runs after a warm-up, each over building the graph
 * and running it to completion.
 */
package dev.tandem.bench.peers;
