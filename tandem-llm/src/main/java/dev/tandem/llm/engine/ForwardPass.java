package dev.tandem.llm.engine;

import dev.tandem.Access;
import dev.tandem.Buffer;
import dev.tandem.Orchestrator;
import java.util.List;
import java.util.function.LongFunction;

/**
 * The seam between the engine and a model: what the {@link StepBuilder} needs to submit one
 * forward pass over a step's rows into a paged KV cache, and nothing of how the model does it.
 */
public interface ForwardPass {

    int layers();

    int vocab();

    /** Positions per KV block. */
    int kvBlockSize();

    /** Bytes of one KV block of one layer, keys or values. */
    long kvBlockBytes();

    /** Device bytes of the activations of passes of {@code maxRows} rows and {@code maxLogits} logit rows. */
    long activationBytes(int maxRows, int maxLogits);

    /** Allocates the activations of passes of up to {@code maxRows} rows, {@code maxLogits} of them with logits. */
    Activations activations(int maxRows, int maxLogits, LongFunction<Buffer> allocate);

    /** The buffers one pass writes and the next reuses; the runtime orders each reuse after the previous readers. */
    interface Activations {

        /**
         * Submits the forward pass of {@code rows} rows: row {@code r}, whose input token is int
         * {@code r} of {@code tokens}, is at position {@code position[r]} of the sequence whose
         * block table is {@code tables[r]}; it writes its keys and values there and attends to
         * positions {@code [0, position[r]]}. The rows {@code logitRows} get logits.
         */
        void forward(Orchestrator o, Buffer[] keys, Buffer[] values, Buffer tokens, int rows, int[] position,
                int[][] tables, int[] logitRows);

        /**
         * Adds the reads of the last pass's {@code n} logit rows, block-major, and returns how many
         * regions they are ({@link StepBuilder#gatherRow} reads them back as rows).
         */
        int addLogitReads(List<Access> accesses, int n);
    }
}
