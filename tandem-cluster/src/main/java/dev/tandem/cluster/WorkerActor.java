package dev.tandem.cluster;

import dev.tandem.AdmissionRejectedException;
import dev.tandem.Token;
import dev.tandem.cluster.WorkerProtocol.Accepted;
import dev.tandem.cluster.WorkerProtocol.Command;
import dev.tandem.cluster.WorkerProtocol.Generate;
import dev.tandem.cluster.WorkerProtocol.Load;
import dev.tandem.cluster.WorkerProtocol.Rejected;
import dev.tandem.llm.Completion;
import dev.tandem.llm.ModelFingerprint;
import dev.tandem.server.Engine;
import dev.tandem.server.EngineStats;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.pubsub.Topic;
import org.apache.pekko.actor.typed.receptionist.Receptionist;
import org.apache.pekko.stream.Materializer;
import org.apache.pekko.stream.SourceRef;
import org.apache.pekko.stream.javadsl.JavaFlowSupport;
import org.apache.pekko.stream.javadsl.StreamRefs;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A worker's actor: it admits each {@link Generate} into the node's engine and answers with the
 * request's token stream as a {@link SourceRef}, and publishes the engine's load every
 * {@code loadInterval}.
 *
 * <p>The stream is the engine's own {@link dev.tandem.TokenStream} as a
 * {@link java.util.concurrent.Flow.Publisher}: tokens leave the worker only against the gateway's
 * demand (which follows its HTTP client's), and without demand the member waits once its stream
 * buffer is full. Whatever ends the stream on the gateway's side (its client gone, the request
 * resumed elsewhere, a lost connection) cancels the source here, and the cancel ends the
 * request in the engine; a request that ends here ends the stream there.
 */
final class WorkerActor {
    private static final Logger log = LoggerFactory.getLogger(WorkerActor.class);

    private WorkerActor() {}

    private enum Tick implements Command {
        INSTANCE
    }

    /**
     * The behaviour.
     *
     * @param model     the name of the engine's model, {@code modelPath} where it was loaded from and
     *                  {@code fingerprint} its {@link ModelFingerprint}, reported with the load
     * @param maxQueued the engine's bound on waiting requests, reported with the load
     * @param draining set when the node leaves: it then admits nothing and says so in its load
     * @param streams  the token streams still running (each completes when its last token has
     *                 left, or it was cancelled), for the drain to wait on
     */
    static Behavior<Command> create(Engine engine, String model, String modelPath, String fingerprint,
            int maxQueued, Duration loadInterval,
            AtomicBoolean draining, Set<CompletableFuture<Void>> streams) {
        return Behaviors.setup(ctx -> {
            ctx.getSystem().receptionist().tell(Receptionist.register(WorkerProtocol.WORKERS, ctx.getSelf()));
            ActorRef<Topic.Command<Load>> topic = ctx.spawn(Topic.create(Load.class, WorkerProtocol.LOAD_TOPIC),
                    "load-topic");
            Materializer materializer = Materializer.createMaterializer(ctx);
            return Behaviors.withTimers(timers -> {
                timers.startTimerWithFixedDelay(Tick.INSTANCE, Duration.ZERO, loadInterval);
                return Behaviors.receive(Command.class)
                        .onMessage(Generate.class, g -> {
                            generate(engine, g, draining.get(), materializer, streams);
                            return Behaviors.same();
                        })
                        .onMessageEquals(Tick.INSTANCE, () -> {
                            EngineStats s = engine.stats();
                            topic.tell(Topic.publish(new Load(ctx.getSelf(), model, modelPath, fingerprint, s.active(), s.queued(),
                                    s.maxActive(), maxQueued, s.kvBlocksInUse(), s.kvBlocksTotal(),
                                    draining.get(), s.cachedPromptTokens(), s.computedPromptTokens())));
                            return Behaviors.same();
                        })
                        .build();
            });
        });
    }

    private static void generate(Engine engine, Generate g, boolean draining, Materializer materializer,
            Set<CompletableFuture<Void>> streams) {
        if (draining) {
            g.replyTo().tell(new Rejected(AdmissionRejectedException.Reason.CLOSED.name(), "the worker is leaving"));
            return;
        }
        Completion completion;
        try {
            completion = engine.submit(g.prompt(), g.options(),
                    g.deadlineMillis() > 0 ? Duration.ofMillis(g.deadlineMillis()) : null);
        } catch (AdmissionRejectedException e) {
            g.replyTo().tell(new Rejected(e.reason().name(), e.getMessage()));
            return;
        } catch (IllegalArgumentException e) {
            g.replyTo().tell(new Rejected(Rejected.PROMPT, e.getMessage()));
            return;
        }
        CompletableFuture<Void> running = new CompletableFuture<>();
        streams.add(running);
        SourceRef<Integer> tokens = JavaFlowSupport.Source.fromPublisher(completion.stream())
                .map(WorkerActor::tokenId)
                .watchTermination((notUsed, done) -> {
                    // Cancelled downstream or ended here: either way the request must not run on.
                    done.whenComplete((ok, failure) -> {
                        completion.cancel();
                        streams.remove(running);
                        running.complete(null);
                    });
                    return notUsed;
                })
                .runWith(StreamRefs.sourceRef(), materializer);
        log.debug("request {} admitted: {} prompt tokens", g.requestId(), g.prompt().length);
        completion.stream().completion().thenAccept(o -> log.debug("request {} ended: {} after {} tokens",
                g.requestId(), o.status(), o.tokens()));
        g.replyTo().tell(new Accepted(tokens));
    }

    private static Integer tokenId(Token token) {
        return token.asInts()[0];
    }
}
