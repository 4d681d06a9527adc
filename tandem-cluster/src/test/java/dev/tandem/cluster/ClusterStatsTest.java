package dev.tandem.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The gateway's counters as {@code /metrics} shows them: per worker and model, before and after binding. */
class ClusterStatsTest {
    private static final String A = "pekko://tandem@127.0.0.1:25521";
    private static final String B = "pekko://tandem@127.0.0.1:25522";
    private static final String C = "pekko://tandem@127.0.0.1:25523";

    @Test
    void countsRoutingAffinityFailoversAndResumptionsPerWorkerAndModel() {
        ClusterStats stats = new ClusterStats();
        stats.routed("m", A, true); // seen before the registry: registered when it is bound
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        stats.bindTo(registry);
        stats.routed("m", A, true);
        stats.routed("m", B, false);
        stats.failover("m", A);
        stats.routed("m", B, null); // the resumption of A's stream
        stats.routed("n", C, true); // a worker of another model
        stats.resumed("m", 400_000_000L);
        stats.failover("n", C); // a stream of the other model lost its worker, and went on elsewhere
        stats.resumed("n", 2_000_000_000L);

        assertThat(stats.routedByWorker()).containsEntry(A, 2L).containsEntry(B, 2L).containsEntry(C, 1L);
        assertThat(stats.routedByModel()).containsOnly(Map.entry("m", 4L), Map.entry("n", 1L));
        assertThat(stats.failoversByWorker()).containsOnly(Map.entry(A, 1L), Map.entry(C, 1L));
        assertThat(stats.failoversByModel()).containsOnly(Map.entry("m", 1L), Map.entry("n", 1L));
        assertThat(stats.resumedByModel()).containsOnly(Map.entry("m", 1L), Map.entry("n", 1L));
        assertThat(stats.resumedCount()).isEqualTo(2);
        assertThat(stats.affinityHits()).isEqualTo(3);
        assertThat(stats.affinityMisses()).isEqualTo(1);
        assertThat(stats.resumeNanos()).isEqualTo(List.of(400_000_000L, 2_000_000_000L));

        String text = registry.scrape();
        assertThat(text).contains("tandem_cluster_requests_routed_total{model=\"m\",worker=\"" + A + "\"} 2.0")
                .contains("tandem_cluster_requests_routed_total{model=\"m\",worker=\"" + B + "\"} 2.0")
                .contains("tandem_cluster_requests_routed_total{model=\"n\",worker=\"" + C + "\"} 1.0")
                .contains("tandem_cluster_failovers_total{model=\"m\",worker=\"" + A + "\"} 1.0")
                .contains("tandem_cluster_failovers_total{model=\"n\",worker=\"" + C + "\"} 1.0")
                .contains("tandem_cluster_affinity_total{placed=\"affine\"} 3.0")
                .contains("tandem_cluster_affinity_total{placed=\"other\"} 1.0")
                .contains("tandem_cluster_streams_resumed_total{model=\"m\"} 1.0")
                .contains("tandem_cluster_streams_resumed_total{model=\"n\"} 1.0")
                .contains("tandem_cluster_resume_latency_seconds_count{model=\"m\"} 1")
                .contains("tandem_cluster_resume_latency_seconds_bucket{model=\"m\",le=\"0.5\"} 1")
                .contains("tandem_cluster_resume_latency_seconds_bucket{model=\"n\",le=\"0.5\"} 0")
                .contains("tandem_cluster_resume_latency_seconds_bucket{model=\"n\",le=\"2.0\"} 1")
                .doesNotContain("tandem_cluster_failovers_total{worker=");
    }

    @Test
    void aResumptionSeenBeforeTheRegistryIsRecordedUnderItsModelWhenBound() {
        ClusterStats stats = new ClusterStats();
        stats.failover("m", A);
        stats.resumed("m", 300_000_000L);
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        stats.bindTo(registry);
        stats.resumed("m", 700_000_000L);
        assertThat(registry.scrape())
                .contains("tandem_cluster_failovers_total{model=\"m\",worker=\"" + A + "\"} 1.0")
                .contains("tandem_cluster_streams_resumed_total{model=\"m\"} 2.0")
                .contains("tandem_cluster_resume_latency_seconds_count{model=\"m\"} 2")
                .contains("tandem_cluster_resume_latency_seconds_bucket{model=\"m\",le=\"0.5\"} 1");
    }

    @Test
    void theAffineWorkerIsTheOneRoutingOffersFirstWhenItHasRoom() {
        List<Long> workers = List.of(11L, 22L, 33L, 44L);
        for (long key = 0; key < 200; key++) {
            long affine = Routing.affine(Routing.mix(key), workers, w -> w * 0x9E3779B97F4A7C15L);
            List<Long> order = Routing.order(Routing.mix(key), workers, w -> w * 0x9E3779B97F4A7C15L, w -> 0.0,
                    w -> false);
            assertThat(order.getFirst()).as("key %d", key).isEqualTo(affine);
        }
    }
}
