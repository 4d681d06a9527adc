/**
 * An OpenAI-compatible streaming HTTP server over a tandem language model.
 *
 * <p>{@link dev.tandem.server.TandemServer} serves the endpoints; it generates only through an
 * {@link dev.tandem.server.Engine} — {@link dev.tandem.server.BatcherEngine}, the default, decodes
 * every request in one continuous batch; {@link dev.tandem.server.SessionEngine} runs each request
 * as its own program in a core session — and is configured by a
 * {@link dev.tandem.server.ServerConfig}. The core is used through {@code dev.tandem} only, the
 * LLM engine through its public packages; nothing here prints (SLF4J only).
 */
package dev.tandem.server;
