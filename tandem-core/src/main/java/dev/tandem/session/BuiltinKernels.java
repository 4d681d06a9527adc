package dev.tandem.session;

import dev.tandem.Kernel;
import dev.tandem.TaskContext;
import dev.tandem.cpu.CoreContext;
import dev.tandem.graph.Step;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/** The runtime's own kernels: reading a token back at the end of a step, and uploads. */
final class BuiltinKernels {
    private BuiltinKernels() {}

    /** Copies the step's token region into the step (payload: the Step). */
    static final Kernel READBACK = new Kernel() {
        @Override
        public String name() {
            return "tandem.readback";
        }

        @Override
        public void run(TaskContext context) {
            CoreContext core = (CoreContext) context;
            Step step = (Step) core.task().payload();
            step.setToken(context.region(0).toArray(ValueLayout.JAVA_BYTE));
        }
    };

    /** Writes host bytes into a region (payload: the byte[] copied at submit). */
    static final Kernel UPLOAD = new Kernel() {
        @Override
        public String name() {
            return "tandem.upload";
        }

        @Override
        public void run(TaskContext context) {
            CoreContext core = (CoreContext) context;
            byte[] bytes = (byte[]) core.task().payload();
            MemorySegment.copy(MemorySegment.ofArray(bytes), 0, context.region(0), 0, bytes.length);
        }
    };
}
