package dev.tandem.cluster;

import dev.tandem.llm.GenerateOptions;
import dev.tandem.llm.ModelFingerprint;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.receptionist.ServiceKey;
import org.apache.pekko.stream.SourceRef;

/**
 * What a gateway and a worker say to each other. A worker registers its actor under
 * {@link #WORKERS} with the receptionist and publishes a {@link Load} on the {@link #LOAD_TOPIC}
 * topic at a fixed interval; a gateway sends it {@link Generate} and gets {@link Accepted} (the
 * tokens as a {@link SourceRef}) or {@link Rejected}.
 */
final class WorkerProtocol {
    private WorkerProtocol() {}

    /** The receptionist key of every worker's actor. */
    static final ServiceKey<Command> WORKERS = ServiceKey.create(Command.class, "tandem-worker");

    /** The name of the topic workers publish their {@link Load} on. */
    static final String LOAD_TOPIC = "tandem-worker-load";

    /** What a worker's actor receives. */
    interface Command {}

    /**
     * Generate from {@code prompt}: the worker submits it to its engine and answers
     * {@code replyTo} at once with its admission.
     *
     * @param requestId      the gateway's id of the request (for logs)
     * @param prompt         the tokens to prefill: the client's prompt and, on a resumed request,
     *                       the tokens already delivered
     * @param options        token limit, sampler (its seed already shifted on a resumed request),
     *                       stop strings
     * @param deadlineMillis time left to the request's deadline, or 0 for none
     */
    record Generate(long requestId, int[] prompt, GenerateOptions options, long deadlineMillis,
            ActorRef<Reply> replyTo) implements Command, ClusterMessage {}

    /** A worker's answer to {@link Generate}. */
    sealed interface Reply extends ClusterMessage permits Accepted, Rejected {}

    /** Admitted: the token ids come through {@code tokens}, back-pressured; cancelling it cancels the request. */
    record Accepted(SourceRef<Integer> tokens) implements Reply {}

    /**
     * Not admitted.
     *
     * @param reason  an {@link dev.tandem.AdmissionRejectedException.Reason} name, or {@link #PROMPT}
     * @param message the worker's words
     */
    record Rejected(String reason, String message) implements Reply {
        /** The prompt does not fit the worker's context. */
        static final String PROMPT = "PROMPT";
    }

    /**
     * A worker's load, as its engine reports it.
     *
     * @param worker    the worker's actor
     * @param model     the name of the model it serves (a GGUF's {@code general.name}, else its file name)
     * @param modelPath the file or directory it loaded that model from, as it names it (a
     *                  gateway that has not seen the model yet reads its text there: the nodes of
     *                  a cluster share one machine or filesystem)
     * @param fingerprint the {@link ModelFingerprint} of that file: with the name, the model's
     *                  identity (two files of one name are two models, {@link WorkerDirectory})
     * @param active    requests generating
     * @param queued    requests admitted and waiting
     * @param maxActive the batch's capacity
     * @param maxQueued how many may wait beyond it before the worker refuses
     * @param kvInUse   KV-cache blocks held (0 when the engine does not page its cache)
     * @param kvTotal   KV-cache blocks in its pool (0 when unknown)
     * @param draining  whether it is leaving (it admits nothing more)
     * @param cachedPromptTokens   prompt tokens its prefix cache served since it started
     * @param computedPromptTokens prompt tokens it computed since it started
     */
    record Load(ActorRef<Command> worker, String model, String modelPath, String fingerprint, int active, int queued, int maxActive, int maxQueued,
            long kvInUse, long kvTotal, boolean draining, long cachedPromptTokens, long computedPromptTokens)
            implements ClusterMessage {

        /** Whether it would refuse a new request ({@code QUEUE_FULL}). */
        boolean full() {
            return active + queued >= maxActive + maxQueued;
        }

        /** Whether a new request would have to wait for a slot. */
        boolean saturated() {
            return active + queued >= maxActive;
        }

        /** Requests per slot: 0 idle, 1 every slot busy, above 1 queueing. */
        double utilisation() {
            return (double) (active + queued) / Math.max(1, maxActive);
        }
    }
}
