/**
 * The OpenAI-compatible streaming server: {@code TandemServer} on Helidon SE's web server (its
 * server-sent events written by the server itself), in front of an {@code Engine} (the continuous batcher, or one program
 * per request). It reads the core and the LLM engine only through their exported packages.
 */
module dev.tandem.server {
    requires transitive dev.tandem.llm;
    requires io.helidon.webserver;
    requires io.helidon.http;
    requires io.helidon.common.media.type;
    requires transitive micrometer.core; // Engine.bindMeters names its MeterRegistry
    requires micrometer.registry.prometheus;
    requires com.fasterxml.jackson.databind;
    requires org.slf4j;

    exports dev.tandem.server;
}
