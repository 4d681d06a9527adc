package dev.tandem.cluster;

import dev.tandem.server.TandemServer;
import io.micrometer.core.instrument.MeterRegistry;
import java.lang.reflect.Field;

/**
 * The meter registry behind a {@link TandemServer}'s {@code /metrics}, so that a gateway can
 * publish its routing and failover counters there.
 *
 * <p><b>A stopgap.</b> {@code TandemServer} offers no way to add meters, and tandem-server is
 * not this module's to change; until it does (the proposed seam: {@code Engine} gets
 * {@code default void bindMeters(MeterRegistry registry) {}}, called once by {@code ServerMetrics}'
 * constructor, which {@code ClusterEngine} overrides), this reads the server's private
 * {@code metrics.registry} fields. Cluster nodes run on the class path, where that is allowed.
 * It fails loudly: a renamed field is an {@link IllegalStateException} at the gateway's start and
 * a failure of {@code ClusterFailoverTest}, never a silently empty {@code /metrics}.
 */
final class ServerRegistry {
    private ServerRegistry() {}

    static MeterRegistry of(TandemServer server) {
        try {
            Object metrics = field(TandemServer.class, "metrics").get(server);
            return (MeterRegistry) field(metrics.getClass(), "registry").get(metrics);
        } catch (ReflectiveOperationException | RuntimeException e) {
            throw new IllegalStateException("cannot reach the meter registry of TandemServer's /metrics (tandem-server"
                    + " changed?): " + e, e);
        }
    }

    private static Field field(Class<?> owner, String name) throws NoSuchFieldException {
        Field f = owner.getDeclaredField(name);
        f.setAccessible(true);
        return f;
    }
}
