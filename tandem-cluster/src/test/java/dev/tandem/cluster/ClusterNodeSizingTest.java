package dev.tandem.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tandem.llm.BatcherConfig;
import dev.tandem.llm.EmbeddedModel;
import dev.tandem.llm.LanguageModel;
import dev.tandem.llm.model.KvType;
import dev.tandem.server.BatcherEngine;
import dev.tandem.server.ServerConfig;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A worker sizes its model as {@code tandem serve} does ({@code --ctx-size}, {@code --kv-cells},
 * {@code --kv-type}, {@code --no-prefix-cache}): a worker node of this JVM, alone in its cluster,
 * loads the embedded model so, and a gateway reads its own model's limits at that context.
 */
@Timeout(120)
class ClusterNodeSizingTest {

    private static ClusterNode.Options options(ClusterNode.Role role, ClusterNode.ModelSizing sizing,
            BatcherConfig batcher) {
        return new ClusterNode.Options(role, "127.0.0.1", NodeProcess.freePort(), List.of(), EmbeddedModel.path(),
                ServerConfig.builder().port(0).build(), batcher, 1, Duration.ofMillis(200), Duration.ofSeconds(3),
                Duration.ofMillis(100), Duration.ofSeconds(1), 64, sizing);
    }

    @Test
    void aWorkerLoadsItsModelAtTheGivenContextWithTheGivenCache() {
        ClusterNode.ModelSizing sizing = new ClusterNode.ModelSizing(128, 1000, KvType.F32);
        try (ClusterNode node = ClusterNode.start(options(ClusterNode.Role.WORKER, sizing,
                BatcherConfig.builder().maxBatch(2).prefixCache(false).build()))) {
            BatcherEngine engine = node.workerEngine();
            LanguageModel model = engine.model();
            assertThat(model.limits().contextLength()).isEqualTo(128);
            assertThat(model.model().options().kvType()).isEqualTo(KvType.F32);
            int blockSize = model.model().options().kvBlockSize();
            assertThat(engine.stats().kvBlocksTotal()).isEqualTo(Math.ceilDiv(1000, blockSize));
            assertThat(engine.batcher().config().prefixCache()).isFalse();
            assertThat(engine.submit(model.encode("Once upon a time"),
                    dev.tandem.llm.GenerateOptions.defaults().withMaxTokens(8), null).await()).isNotEmpty();
        }
    }

    @Test
    void theDefaultsAreTheModelsContextAndAnF16Cache() {
        try (ClusterNode node = ClusterNode.start(options(ClusterNode.Role.WORKER, ClusterNode.ModelSizing.DEFAULTS,
                BatcherConfig.builder().maxBatch(2).build()))) {
            LanguageModel model = node.workerEngine().model();
            assertThat(model.limits().contextLength()).isEqualTo(
                    LanguageModel.loadText(EmbeddedModel.path()).limits().contextLength());
            assertThat(model.model().options().kvType()).isEqualTo(KvType.F16);
        }
    }

    @Test
    void aGatewayAdmitsItsOwnModelAtTheGivenContext() {
        try (ClusterNode node = ClusterNode.start(options(ClusterNode.Role.GATEWAY,
                new ClusterNode.ModelSizing(96, 0, KvType.F16), BatcherConfig.defaults()))) {
            assertThat(node.gatewayEngine().model().limits().contextLength()).isEqualTo(96);
        }
    }
}
