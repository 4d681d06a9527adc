/**
 * The tandem runtime core: the public API in {@code dev.tandem}, and everything behind it.
 *
 * <p>Only {@code dev.tandem} is exported. The device service package ({@code dev.tandem.device},
 * the {@code Device} interface and the readiness protocol it completes into) stays inside the
 * module for now: its next implementations (a GPU device, a remote worker) are to be written
 * beside the CPU device, and the package's types are the runtime's own task nodes, not yet an
 * API to hold stable for other modules. Exporting it (or exporting it to a named device
 * module) is the step that makes it one.
 */
module dev.tandem.core {
    requires org.slf4j;
    requires jdk.jfr;
    requires static jdk.management; // CardMarks reads the collector's options where the runtime has it

    exports dev.tandem;
}
