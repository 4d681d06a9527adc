package dev.tandem.cluster;

import dev.tandem.llm.ModelFingerprint;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tandem.AdmissionRejectedException;
import dev.tandem.bench.RandomGguf;
import dev.tandem.cluster.WorkerProtocol.Accepted;
import dev.tandem.cluster.WorkerProtocol.Command;
import dev.tandem.cluster.WorkerProtocol.Generate;
import dev.tandem.cluster.WorkerProtocol.Load;
import dev.tandem.cluster.WorkerProtocol.Rejected;
import dev.tandem.llm.BatcherConfig;
import dev.tandem.llm.Completion;
import dev.tandem.llm.EmbeddedModel;
import dev.tandem.llm.FinishReason;
import dev.tandem.llm.GenerateOptions;
import dev.tandem.llm.LanguageModel;
import dev.tandem.llm.gguf.GgmlType;
import dev.tandem.server.ServerConfig;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.stream.Materializer;
import org.apache.pekko.stream.javadsl.Source;
import org.apache.pekko.stream.javadsl.StreamRefs;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A gateway's admission, against a worker actor that refuses ({@code QUEUE_FULL}) until told to
 * admit, in a gateway node of this JVM: while every worker reports itself full, requests wait at
 * the gateway up to its bound and the next is refused; a waiting request runs once a worker takes
 * it, and its place is free again. With no worker for the model the answer is {@code CLOSED}.
 * With workers of two models, each model's admission looks at its own workers only.
 */
@Timeout(120)
class GatewayAdmissionTest {
    /** The stand-in workers' file of the gateway's model. */
    private static final String FILE = "0123456789abcdef";
    private static ClusterNode gateway;

    @BeforeAll
    static void start() {
        gateway = ClusterNode.start(new ClusterNode.Options(ClusterNode.Role.GATEWAY, "127.0.0.1",
                NodeProcess.freePort(), List.of(), EmbeddedModel.path(), ServerConfig.builder().port(0).build(),
                BatcherConfig.defaults(), 1, Duration.ofMillis(200), Duration.ofSeconds(3), Duration.ofMillis(100),
                Duration.ofSeconds(1), 64));
    }

    @AfterAll
    static void stop() {
        if (gateway != null) {
            gateway.close();
        }
    }

    @Test
    void whileEveryWorkerIsFullRequestsWaitAtTheGatewayWithinItsBoundAndTheNextIsRefused() throws Exception {
        ClusterEngine node = gateway.gatewayEngine();
        LanguageModel model = node.model();
        int[] tokens = model.encode("the cat sat");
        AtomicBoolean admit = new AtomicBoolean();
        CompletableFuture<Void> refused = new CompletableFuture<>();
        Materializer materializer = Materializer.createMaterializer(node.system());
        ActorRef<Command> worker = node.system().systemActorOf(
                Behaviors.receive(Command.class).onMessage(Generate.class, g -> {
                    if (admit.get()) {
                        List<Integer> ids = java.util.Arrays.stream(tokens).skip(1).boxed().toList();
                        g.replyTo().tell(new Accepted(Source.from(ids).runWith(StreamRefs.sourceRef(), materializer)));
                    } else {
                        g.replyTo().tell(new Rejected("QUEUE_FULL", "1 active, 0 may wait"));
                        refused.complete(null);
                    }
                    return Behaviors.same();
                }).build(), "stand-in-worker", org.apache.pekko.actor.typed.Props.empty());
        WorkerDirectory directory = new WorkerDirectory();
        directory.listing(Set.of(worker));
        directory.load(new Load(worker, model.name(), "/m.gguf", FILE, 1, 0, 1, 0, 0, 8, false, 0, 0));
        ClusterEngine engine = new ClusterEngine(model, FILE, directory, node.system(),
                ClusterEngine.Settings.defaults().withMaxWaiting(1));
        GenerateOptions options = GenerateOptions.defaults().withMaxTokens(tokens.length - 1);

        Completion waiting = engine.submit(tokens, options, null);
        assertThatThrownBy(() -> engine.submit(tokens, options, null)).isInstanceOf(AdmissionRejectedException.class)
                .hasMessageContaining("1 requests already wait at the gateway")
                .extracting(e -> ((AdmissionRejectedException) e).reason())
                .isEqualTo(AdmissionRejectedException.Reason.QUEUE_FULL);

        CompletableFuture<String> text = CompletableFuture.supplyAsync(waiting::await, r -> Thread.ofVirtual().start(r));
        refused.get(30, TimeUnit.SECONDS); // the reader asked, was refused, and waits for the directory to change
        assertThat(text).isNotDone();
        admit.set(true);
        directory.load(new Load(worker, model.name(), "/m.gguf", FILE, 0, 0, 1, 0, 0, 8, false, 0, 0)); // the next report: a free slot
        assertThat(text.get(30, TimeUnit.SECONDS)).isNotEmpty();
        assertThat(waiting.tokens()).containsExactly(java.util.Arrays.copyOfRange(tokens, 1, tokens.length));
        assertThat(waiting.finishReason()).isEqualTo(FinishReason.LENGTH);

        directory.load(new Load(worker, model.name(), "/m.gguf", FILE, 1, 0, 1, 0, 0, 8, false, 0, 0)); // full again
        Completion next = engine.submit(tokens, options, null); // the waiting place was given back
        next.cancel();
        assertThat(next.stream().completion().get(10, TimeUnit.SECONDS).status()).isEqualTo(dev.tandem.Status.CANCELLED);
    }

    @Test
    void aModelsAdmissionLooksAtItsOwnWorkersOnly() throws Exception {
        ClusterEngine node = gateway.gatewayEngine();
        LanguageModel model = node.model();
        Path otherPath = RandomGguf.cached(Path.of("target", "cluster-test-models", "random-64x2.gguf").toAbsolutePath(),
                RandomGguf.shape(64, 2, 4, 4, 192), GgmlType.F32, 48, true);
        String other = LanguageModel.loadText(otherPath).name();
        Materializer materializer = Materializer.createMaterializer(node.system());
        CompletableFuture<String> askedFull = new CompletableFuture<>();
        ActorRef<Command> full = node.system().systemActorOf(Behaviors.receive(Command.class).onMessage(Generate.class,
                g -> {
                    askedFull.complete("request " + g.requestId());
                    g.replyTo().tell(new Rejected("QUEUE_FULL", "1 active, 0 may wait"));
                    return Behaviors.same();
                }).build(), "full-worker", org.apache.pekko.actor.typed.Props.empty());
        ActorRef<Command> free = node.system().systemActorOf(Behaviors.receive(Command.class).onMessage(Generate.class,
                g -> {
                    g.replyTo().tell(new Accepted(Source.from(List.of(5, 6)).runWith(StreamRefs.sourceRef(),
                            materializer)));
                    return Behaviors.same();
                }).build(), "free-worker-of-another-model", org.apache.pekko.actor.typed.Props.empty());
        WorkerDirectory directory = new WorkerDirectory();
        ClusterEngine engine = new ClusterEngine(model, FILE, directory, node.system(),
                ClusterEngine.Settings.defaults().withMaxWaiting(0));
        directory.listing(Set.of(full, free));
        directory.load(new Load(full, model.name(), "/m.gguf", FILE, 1, 0, 1, 0, 0, 8, false, 0, 0));
        directory.load(new Load(free, other, otherPath.toString(), ModelFingerprint.of(otherPath), 0, 0, 1, 0, 0, 8, false, 0, 0));

        // The own model's only worker is full: 429 at once (no waiting places), whatever the other model's worker has.
        assertThatThrownBy(() -> engine.submit(model.encode("the cat"), GenerateOptions.defaults(), null))
                .isInstanceOf(AdmissionRejectedException.class)
                .extracting(e -> ((AdmissionRejectedException) e).reason())
                .isEqualTo(AdmissionRejectedException.Reason.QUEUE_FULL);

        // The other model, once its text is read (from the path its worker announced), runs on its worker only.
        ClusterEngine second = engine.otherModel(other).get(30, TimeUnit.SECONDS);
        assertThat(engine.models()).containsOnlyKeys(model.name(), other).containsEntry(other, second);
        assertThat(second.model().name()).isEqualTo(other);
        Completion c = second.submit(second.model().encode("the cat"), GenerateOptions.defaults().withMaxTokens(2), null);
        c.await();
        assertThat(c.tokens()).containsExactly(5, 6);
        assertThat(askedFull).as("the full worker of the own model was never offered it").isNotDone();
        assertThat(engine.clusterStats().routedByModel()).containsOnly(java.util.Map.entry(other, 1L));
    }

    @Test
    void aModelAWorkerServesIsPendingWhileItsTextIsReadAndNeverUnknown() throws Exception {
        ClusterEngine node = gateway.gatewayEngine();
        Path otherPath = RandomGguf.cached(Path.of("target", "cluster-test-models", "random-64x2.gguf").toAbsolutePath(),
                RandomGguf.shape(64, 2, 4, 4, 192), GgmlType.F32, 48, true);
        String other = LanguageModel.loadText(otherPath).name();
        ActorRef<Command> unreadable = node.system().systemActorOf(Behaviors.<Command>empty(), "unreadable-worker",
                org.apache.pekko.actor.typed.Props.empty());
        ActorRef<Command> readable = node.system().systemActorOf(Behaviors.<Command>empty(), "readable-worker",
                org.apache.pekko.actor.typed.Props.empty());
        ActorRef<Command> claimsAnother = node.system().systemActorOf(Behaviors.<Command>empty(), "mismatched-worker",
                org.apache.pekko.actor.typed.Props.empty());
        WorkerDirectory directory = new WorkerDirectory();
        ClusterEngine engine = new ClusterEngine(node.model(), FILE, directory, node.system(),
                ClusterEngine.Settings.defaults());
        assertThat(engine.pendingModel("elsewhere")).as("no worker serves it").isNull();

        directory.listing(Set.of(unreadable, readable, claimsAnother));
        directory.load(new Load(readable, other, otherPath.toString(), ModelFingerprint.of(otherPath), 0, 0, 1, 0, 0, 8,
                false, 0, 0));
        // Pending from the worker's arrival on, complete once read: the engine models() then gives.
        CompletableFuture<ClusterEngine> read = engine.pendingModel(other);
        assertThat(read).isNotNull();
        assertThat(read.get(30, TimeUnit.SECONDS)).isSameAs(engine.models().get(other));

        // A text that cannot be read is a failed future (the server's 503), not an unknown model (404).
        directory.load(new Load(unreadable, "elsewhere", "/nonexistent/elsewhere.gguf", "feedfacefeedface", 0, 0, 1,
                0, 0, 8, false, 0, 0));
        CompletableFuture<ClusterEngine> failed = engine.pendingModel("elsewhere");
        assertThat(failed).isNotNull();
        assertThatThrownBy(() -> failed.get(30, TimeUnit.SECONDS)).isInstanceOf(java.util.concurrent.ExecutionException.class);
        assertThat(engine.models()).containsOnlyKeys(other);

        // The file at the announced path must be the worker's: another gateway, whose only worker of the
        // model announces another fingerprint than the file at that path has, reads and refuses it.
        WorkerDirectory elsewhere = new WorkerDirectory();
        ClusterEngine gateway2 = new ClusterEngine(node.model(), FILE, elsewhere, node.system(),
                ClusterEngine.Settings.defaults());
        elsewhere.listing(Set.of(claimsAnother));
        elsewhere.load(new Load(claimsAnother, other, otherPath.toString(), "feedfacefeedface", 0, 0, 1, 0, 0, 8, false,
                0, 0));
        assertThatThrownBy(() -> gateway2.pendingModel(other).get(30, TimeUnit.SECONDS))
                .hasMessageContaining("another one than the worker's");
        assertThat(gateway2.models()).isEmpty();
    }

    @Test
    void withNoWorkerForTheModelTheGatewayRefusesAtOnce() {
        ClusterEngine lonely = new ClusterEngine(gateway.gatewayEngine().model(), FILE, new WorkerDirectory(),
                gateway.gatewayEngine().system(), ClusterEngine.Settings.defaults());
        assertThatThrownBy(() -> lonely.submit(new int[] {1, 2, 3}, GenerateOptions.defaults(), null))
                .isInstanceOf(AdmissionRejectedException.class).hasMessageContaining("no reachable worker serves")
                .extracting(e -> ((AdmissionRejectedException) e).reason())
                .isEqualTo(AdmissionRejectedException.Reason.CLOSED);
    }
}
