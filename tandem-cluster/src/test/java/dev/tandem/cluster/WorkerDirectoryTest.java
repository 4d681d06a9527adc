package dev.tandem.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tandem.cluster.WorkerProtocol.Command;
import dev.tandem.cluster.WorkerProtocol.Load;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Props;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A model's identity at a gateway is its name and its file: a worker with another file under a
 * name is refused while that name stands for a file with workers; it takes the name over only
 * when the last of them is gone (an unreachable one still holds it), and a stream of one file
 * never finds the other's workers eligible.
 */
class WorkerDirectoryTest {
    private static final String A = "aaaaaaaaaaaaaaaa";
    private static final String B = "bbbbbbbbbbbbbbbb";
    /** Two nodes' workers, on two addresses (so that one can be unreachable alone). */
    private static ActorSystem<Void> nodeA;
    private static ActorSystem<Void> nodeB;

    @BeforeAll
    static void start() {
        nodeA = ActorSystem.create(Behaviors.empty(), "node-a");
        nodeB = ActorSystem.create(Behaviors.empty(), "node-b");
    }

    @AfterAll
    static void stop() {
        nodeA.terminate();
        nodeB.terminate();
    }

    private static ActorRef<Command> worker(ActorSystem<Void> node, String name) {
        return node.systemActorOf(Behaviors.<Command>empty(), name, Props.empty());
    }

    private static Load load(ActorRef<Command> worker, String model, String fingerprint) {
        return new Load(worker, model, "/models/" + fingerprint + ".gguf", fingerprint, 0, 0, 4, 0, 0, 0, false, 0, 0);
    }

    @Test
    void aSecondFileUnderANameIsRefusedUntilTheFirstFilesWorkersAreGone() {
        ActorRef<Command> first = worker(nodeA, "first");
        ActorRef<Command> second = worker(nodeB, "second");
        WorkerDirectory directory = new WorkerDirectory();
        List<Load> accepted = new ArrayList<>();
        directory.onArrival(accepted::add);

        directory.listing(Set.of(first, second));
        directory.load(load(first, "m", A));
        directory.load(load(second, "m", B));
        assertThat(directory.standsFor("m")).isEqualTo(A);
        assertThat(directory.models().get("m").fingerprint()).isEqualTo(A);
        assertThat(accepted).extracting(Load::worker).containsExactly(first);
        assertThat(directory.eligible("m", A)).extracting(WorkerDirectory.Worker::ref).containsExactly(first);

        // Unreachable (a SIGSTOP, a partition), the first file's worker still holds the name: nothing
        // of the name is served meanwhile, and a stream of file A has nowhere to resume.
        directory.unreachable(first.path().address());
        assertThat(directory.standsFor("m")).isEqualTo(A);
        assertThat(directory.models()).doesNotContainKey("m");
        assertThat(directory.eligible("m", A)).isEmpty();
        directory.reachable(first.path().address());

        // Gone: the name passes to the refused worker's file, which is accepted now; file A's
        // streams still find none of its workers.
        directory.listing(Set.of(second));
        assertThat(directory.standsFor("m")).isEqualTo(B);
        assertThat(directory.models().get("m").fingerprint()).isEqualTo(B);
        assertThat(accepted).extracting(Load::worker).containsExactly(first, second);
        assertThat(directory.eligible("m", A)).isEmpty();
        assertThat(directory.eligible("m", B)).extracting(WorkerDirectory.Worker::ref).containsExactly(second);

        // The last worker of the name gone, the name stands for nothing until the next worker.
        directory.removed(second.path().address());
        assertThat(directory.standsFor("m")).isNull();
        assertThat(directory.models()).isEmpty();
    }

    @Test
    void theGatewaysOwnModelsNameStandsForItsOwnFileForGood() {
        ActorRef<Command> other = worker(nodeA, "other-file");
        ActorRef<Command> own = worker(nodeB, "own-file");
        WorkerDirectory directory = new WorkerDirectory("own", A);
        List<Load> accepted = new ArrayList<>();
        directory.onArrival(accepted::add);

        directory.listing(Set.of(other));
        directory.load(load(other, "own", B)); // first to arrive, yet another file than the gateway's
        assertThat(directory.standsFor("own")).isEqualTo(A);
        assertThat(directory.models()).isEmpty();
        assertThat(accepted).isEmpty();

        directory.listing(Set.of(other, own));
        directory.load(load(own, "own", A));
        assertThat(directory.models().get("own").worker()).isEqualTo(own);
        directory.listing(Set.of(other));
        assertThat(directory.standsFor("own")).as("pinned").isEqualTo(A);
        assertThat(directory.models()).isEmpty();
        assertThat(accepted).extracting(Load::worker).containsExactly(own);
    }
}
