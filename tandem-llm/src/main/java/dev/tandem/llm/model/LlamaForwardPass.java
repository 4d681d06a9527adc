package dev.tandem.llm.model;

import dev.tandem.Access;
import dev.tandem.Buffer;
import dev.tandem.Orchestrator;
import dev.tandem.llm.engine.ForwardPass;
import java.util.List;
import java.util.function.LongFunction;

/** {@link LlamaModel} seen through the engine's {@link ForwardPass} seam. */
final class LlamaForwardPass implements ForwardPass {
    private final LlamaModel model;

    LlamaForwardPass(LlamaModel model) {
        this.model = model;
    }

    @Override
    public int layers() {
        return model.config().layers();
    }

    @Override
    public int vocab() {
        return model.config().vocab();
    }

    @Override
    public int kvBlockSize() {
        return model.options().kvBlockSize();
    }

    @Override
    public long kvBlockBytes() {
        return model.kvBlockBytes();
    }

    @Override
    public long activationBytes(int maxRows, int maxLogits) {
        return model.activationBytes(maxRows, maxLogits);
    }

    @Override
    public Activations activations(int maxRows, int maxLogits, LongFunction<Buffer> allocate) {
        LlamaModel.Activations a = model.new Activations(maxRows, maxLogits, allocate);
        return new Activations() {
            @Override
            public void forward(Orchestrator o, Buffer[] keys, Buffer[] values, Buffer tokens, int rows,
                    int[] position, int[][] tables, int[] logitRows) {
                model.forward(o, a, keys, values, tokens, rows, position, tables, logitRows);
            }

            @Override
            public int addLogitReads(List<Access> accesses, int n) {
                return model.addLogitReads(accesses, a, n);
            }
        };
    }
}
