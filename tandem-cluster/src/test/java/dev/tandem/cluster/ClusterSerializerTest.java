package dev.tandem.cluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.typesafe.config.ConfigFactory;
import dev.tandem.cluster.WorkerProtocol.Accepted;
import dev.tandem.cluster.WorkerProtocol.Generate;
import dev.tandem.cluster.WorkerProtocol.Load;
import dev.tandem.cluster.WorkerProtocol.Rejected;
import dev.tandem.llm.GenerateOptions;
import dev.tandem.llm.sampling.SamplerConfig;
import java.io.NotSerializableException;
import java.util.List;
import org.apache.pekko.actor.ExtendedActorSystem;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Adapter;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.stream.Materializer;
import org.apache.pekko.stream.SourceRef;
import org.apache.pekko.stream.javadsl.Sink;
import org.apache.pekko.stream.javadsl.Source;
import org.apache.pekko.stream.javadsl.StreamRefs;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Every message round-trips through the serializer, the SourceRef still streaming; malformed bytes fail clearly. */
@Timeout(60)
class ClusterSerializerTest {
    private static ActorSystem<Void> system;
    private static ClusterSerializer serializer;

    @BeforeAll
    static void start() {
        system = ActorSystem.create(Behaviors.empty(), "serializer-test", ConfigFactory.parseString("""
                pekko.loglevel = WARNING
                pekko.actor.provider = local
                """).withFallback(ConfigFactory.load()));
        serializer = new ClusterSerializer((ExtendedActorSystem) Adapter.toClassic(system));
    }

    @AfterAll
    static void stop() {
        system.terminate();
        system.getWhenTerminated().toCompletableFuture().join();
    }

    private static Object roundTrip(Object message) throws NotSerializableException {
        return serializer.fromBinary(serializer.toBinary(message), serializer.manifest(message));
    }

    @Test
    void generateKeepsEveryFieldOfTheRequest() throws Exception {
        ActorRef<WorkerProtocol.Reply> replyTo = Adapter.toTyped(Adapter.toClassic(system).deadLetters());
        SamplerConfig sampler = SamplerConfig.builder().temperature(0.7f).topK(12).topP(0.9f).minP(0.02f)
                .repetitionPenalty(1.1f).repeatLastN(32).presencePenalty(0.3f).frequencyPenalty(-0.2f)
                .penalizePrompt(false).seed(-42).build();
        GenerateOptions options = new GenerateOptions(77, sampler, List.of("The end", "\n\n"), true);
        Generate g = new Generate(9, new int[] {1, 400, 3, 511}, options, 1234, replyTo);
        Generate back = (Generate) roundTrip(g);
        assertThat(back.requestId()).isEqualTo(9);
        assertThat(back.prompt()).containsExactly(1, 400, 3, 511);
        assertThat(back.options()).isEqualTo(options);
        assertThat(back.deadlineMillis()).isEqualTo(1234);
        assertThat(back.replyTo()).isEqualTo(replyTo);
    }

    @Test
    void rejectedAndLoadRoundTrip() throws Exception {
        Rejected r = new Rejected("QUEUE_FULL", "64 requests wait");
        assertThat(roundTrip(r)).isEqualTo(r);
        ActorRef<WorkerProtocol.Command> worker = Adapter.toTyped(Adapter.toClassic(system).deadLetters());
        Load load = new Load(worker, "stories260K", "/models/stories260K.gguf", "270cba1bd5109f42", 3, 2, 8, 64, 40, 512, true, 96, 1000);
        assertThat(roundTrip(load)).isEqualTo(load);
    }

    @Test
    void anAcceptedSourceRefStillStreamsItsTokens() throws Exception {
        Materializer materializer = Materializer.createMaterializer(system);
        SourceRef<Integer> ref = Source.from(List.of(5, 6, 7)).runWith(StreamRefs.sourceRef(), materializer);
        Accepted back = (Accepted) roundTrip(new Accepted(ref));
        List<Integer> tokens = back.tokens().getSource().runWith(Sink.seq(), materializer).toCompletableFuture().get();
        assertThat(tokens).containsExactly(5, 6, 7);
    }

    @Test
    void malformedOrUnknownBytesFailNamingTheManifest() {
        assertThatThrownBy(() -> serializer.fromBinary(new byte[] {0, 0, 0, 1}, "G"))
                .isInstanceOf(NotSerializableException.class).hasMessageContaining("manifest 'G' is malformed");
        assertThatThrownBy(() -> serializer.fromBinary(new byte[0], "Z"))
                .isInstanceOf(NotSerializableException.class).hasMessageContaining("unknown tandem cluster manifest 'Z'");
        assertThatThrownBy(() -> serializer.manifest("not a message"))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("java.lang.String");
    }
}
