package dev.tandem.cluster;

import dev.tandem.cluster.WorkerProtocol.Accepted;
import dev.tandem.cluster.WorkerProtocol.Generate;
import dev.tandem.cluster.WorkerProtocol.Load;
import dev.tandem.cluster.WorkerProtocol.Rejected;
import dev.tandem.llm.GenerateOptions;
import dev.tandem.llm.sampling.SamplerConfig;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.NotSerializableException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;
import org.apache.pekko.actor.ExtendedActorSystem;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorRefResolver;
import org.apache.pekko.actor.typed.javadsl.Adapter;
import org.apache.pekko.serialization.Serialization;
import org.apache.pekko.serialization.SerializationExtension;
import org.apache.pekko.serialization.Serializer;
import org.apache.pekko.serialization.SerializerWithStringManifest;
import org.apache.pekko.serialization.Serializers;
import org.apache.pekko.stream.SourceRef;

/**
 * Writes the {@link ClusterMessage}s as compact binary: fixed fields in order with
 * {@link DataOutputStream}, actor references in Pekko's serialization format (resolved again
 * through {@link ActorRefResolver}), and a {@link SourceRef} through the serializer Pekko binds
 * to it (its id and manifest written in front of its bytes). One manifest letter per message.
 */
public final class ClusterSerializer extends SerializerWithStringManifest {
    /** Pekko reserves ids 0 to 40. */
    static final int IDENTIFIER = 4848;

    private final ExtendedActorSystem system;
    private volatile ActorRefResolver resolver;

    public ClusterSerializer(ExtendedActorSystem system) {
        this.system = system;
    }

    @Override
    public int identifier() {
        return IDENTIFIER;
    }

    @Override
    public String manifest(Object o) {
        return switch (o) {
            case Generate g -> "G";
            case Accepted a -> "A";
            case Rejected r -> "R";
            case Load l -> "L";
            default -> throw new IllegalArgumentException("not a tandem cluster message: " + o.getClass().getName());
        };
    }

    @Override
    public byte[] toBinary(Object o) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (DataOutputStream out = new DataOutputStream(bytes)) {
            switch (o) {
                case Generate g -> {
                    out.writeLong(g.requestId());
                    out.writeInt(g.prompt().length);
                    for (int t : g.prompt()) {
                        out.writeInt(t);
                    }
                    writeOptions(out, g.options());
                    out.writeLong(g.deadlineMillis());
                    out.writeUTF(resolver().toSerializationFormat(g.replyTo()));
                }
                case Accepted a -> writeNested(out, a.tokens());
                case Rejected r -> {
                    out.writeUTF(r.reason());
                    out.writeUTF(r.message());
                }
                case Load l -> {
                    out.writeUTF(resolver().toSerializationFormat(l.worker()));
                    out.writeUTF(l.model());
                    out.writeUTF(l.modelPath());
                    out.writeUTF(l.fingerprint());
                    out.writeInt(l.active());
                    out.writeInt(l.queued());
                    out.writeInt(l.maxActive());
                    out.writeInt(l.maxQueued());
                    out.writeLong(l.kvInUse());
                    out.writeLong(l.kvTotal());
                    out.writeBoolean(l.draining());
                    out.writeLong(l.cachedPromptTokens());
                    out.writeLong(l.computedPromptTokens());
                }
                default -> throw new IllegalArgumentException("not a tandem cluster message: " + o.getClass().getName());
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return bytes.toByteArray();
    }

    @Override
    public Object fromBinary(byte[] bytes, String manifest) throws NotSerializableException {
        try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(bytes))) {
            return switch (manifest) {
                case "G" -> {
                    long id = in.readLong();
                    int[] prompt = new int[in.readInt()];
                    for (int i = 0; i < prompt.length; i++) {
                        prompt[i] = in.readInt();
                    }
                    GenerateOptions options = readOptions(in);
                    long deadline = in.readLong();
                    ActorRef<WorkerProtocol.Reply> replyTo = resolver().resolveActorRef(in.readUTF());
                    yield new Generate(id, prompt, options, deadline, replyTo);
                }
                case "A" -> {
                    @SuppressWarnings("unchecked")
                    SourceRef<Integer> tokens = (SourceRef<Integer>) readNested(in);
                    yield new Accepted(tokens);
                }
                case "R" -> new Rejected(in.readUTF(), in.readUTF());
                case "L" -> {
                    ActorRef<WorkerProtocol.Command> worker = resolver().resolveActorRef(in.readUTF());
                    yield new Load(worker, in.readUTF(), in.readUTF(), in.readUTF(), in.readInt(), in.readInt(), in.readInt(),
                            in.readInt(), in.readLong(), in.readLong(), in.readBoolean(), in.readLong(), in.readLong());
                }
                default -> throw new NotSerializableException("unknown tandem cluster manifest '" + manifest + "'");
            };
        } catch (IOException e) {
            NotSerializableException failure = new NotSerializableException(
                    "a tandem cluster message of manifest '" + manifest + "' is malformed: " + e);
            failure.initCause(e);
            throw failure;
        }
    }

    private static void writeOptions(DataOutputStream out, GenerateOptions options) throws IOException {
        out.writeInt(options.maxTokens());
        SamplerConfig s = options.sampler();
        out.writeFloat(s.temperature());
        out.writeInt(s.topK());
        out.writeFloat(s.topP());
        out.writeFloat(s.minP());
        out.writeFloat(s.repetitionPenalty());
        out.writeInt(s.repeatLastN());
        out.writeFloat(s.presencePenalty());
        out.writeFloat(s.frequencyPenalty());
        out.writeBoolean(s.penalizePrompt());
        out.writeLong(s.seed());
        out.writeInt(options.stop().size());
        for (String stop : options.stop()) {
            out.writeUTF(stop);
        }
        out.writeBoolean(options.ignoreEos());
    }

    private static GenerateOptions readOptions(DataInputStream in) throws IOException {
        int maxTokens = in.readInt();
        SamplerConfig sampler = SamplerConfig.builder().temperature(in.readFloat()).topK(in.readInt())
                .topP(in.readFloat()).minP(in.readFloat()).repetitionPenalty(in.readFloat())
                .repeatLastN(in.readInt()).presencePenalty(in.readFloat()).frequencyPenalty(in.readFloat())
                .penalizePrompt(in.readBoolean()).seed(in.readLong()).build();
        int stops = in.readInt();
        if (stops < 0 || stops > 64) {
            throw new IOException("a request with " + stops + " stop strings");
        }
        List<String> stop = new ArrayList<>(stops);
        for (int i = 0; i < stops; i++) {
            stop.add(in.readUTF());
        }
        return new GenerateOptions(maxTokens, sampler, stop, in.readBoolean());
    }

    /** Another serializer's object: its serializer id, its manifest, its bytes. */
    private void writeNested(DataOutputStream out, Object o) throws IOException {
        Serialization serialization = SerializationExtension.get(system);
        Serializer serializer = serialization.findSerializerFor(o);
        byte[] bytes = serializer.toBinary(o);
        out.writeInt(serializer.identifier());
        out.writeUTF(Serializers.manifestFor(serializer, o));
        out.writeInt(bytes.length);
        out.write(bytes);
    }

    private Object readNested(DataInputStream in) throws IOException {
        int id = in.readInt();
        String manifest = in.readUTF();
        byte[] bytes = in.readNBytes(in.readInt());
        return SerializationExtension.get(system).deserialize(bytes, id, manifest).get();
    }

    private ActorRefResolver resolver() {
        ActorRefResolver r = resolver;
        if (r == null) {
            r = ActorRefResolver.get(Adapter.toTyped(system));
            resolver = r;
        }
        return r;
    }
}
