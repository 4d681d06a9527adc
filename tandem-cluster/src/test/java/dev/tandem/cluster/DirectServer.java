package dev.tandem.cluster;

import dev.tandem.CpuDeviceConfig;
import dev.tandem.Worker;
import dev.tandem.llm.BatcherConfig;
import dev.tandem.llm.EmbeddedModel;
import dev.tandem.llm.LanguageModel;
import dev.tandem.server.BatcherEngine;
import dev.tandem.server.ServerConfig;
import dev.tandem.server.TandemServer;

/**
 * What {@code tandem serve --model stories260K --port 0 --cores N --max-batch B} runs, without
 * Pekko: a {@link TandemServer} over a {@link BatcherEngine} in one JVM. {@link ClusterScalingBench}
 * measures it as the direct path to a worker (tandem-cluster does not depend on the CLI).
 * Arguments: cores, max batch, model (a path, or {@code stories260K}). Prints {@code listening on http://127.0.0.1:PORT}; runs until killed.
 */
final class DirectServer {
    private DirectServer() {}

    public static void main(String[] args) throws InterruptedException {
        int cores = Integer.parseInt(args[0]);
        int maxBatch = Integer.parseInt(args[1]);
        Worker worker = Worker.create(CpuDeviceConfig.withCores(cores));
        LanguageModel model = LanguageModel.load(worker, EmbeddedModel.resolve(args[2]));
        BatcherEngine engine = BatcherEngine.start(worker, model, BatcherConfig.builder().maxBatch(maxBatch).build());
        TandemServer server = TandemServer.start(engine, ServerConfig.builder().port(0).build());
        System.out.println("direct server, listening on http://127.0.0.1:" + server.port());
        System.out.flush();
        server.terminated().join();
    }
}
