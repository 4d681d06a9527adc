/**
 * The benchmarks and their peers (ForkJoin, oneTBB, llama.cpp), the trace reader and its
 * report. It reads tandem only through the exported packages of the modules it measures.
 */
module dev.tandem.bench {
    requires transitive dev.tandem.server;
    requires com.fasterxml.jackson.databind;
    requires org.slf4j;
    requires java.net.http;
    requires java.desktop; // the swimlane chart's PNG (java.awt.image, javax.imageio)
    requires jdk.management; // heap bytes allocated per token (com.sun.management.ThreadMXBean)

    exports dev.tandem.bench;
    exports dev.tandem.bench.peers;
    exports dev.tandem.bench.trace;
}
