package dev.tandem.server;

import com.fasterxml.jackson.databind.JsonNode;
import dev.tandem.llm.sampling.SamplerConfig;
import java.util.concurrent.ThreadLocalRandom;

/** The checks of optional request fields that every route's parser shares; a bad value is a 400 naming it. */
final class Params {
    private Params() {}

    static String optionalString(JsonNode body, String name) {
        JsonNode n = body.get(name);
        if (n == null || n.isNull()) {
            return null;
        }
        if (!n.isTextual()) {
            throw ApiException.badParameter(name, name + " must be a string");
        }
        return n.asText();
    }

    static Double optionalNumber(JsonNode body, String name, double min, double max) {
        JsonNode n = body.get(name);
        if (n == null || n.isNull()) {
            return null;
        }
        if (!n.isNumber()) {
            throw ApiException.badParameter(name, name + " must be a number");
        }
        double value = n.doubleValue();
        if (!(value >= min && value <= max)) {
            throw ApiException.badParameter(name, name + " must be in [" + min + ", " + max + "], was " + value);
        }
        return value;
    }

    /**
     * {@code temperature} in [0, 2], {@code top_p} in (0, 1] and {@code seed} (random when left
     * out) into {@code sampler}; the fields left out keep the sampler's defaults.
     */
    static SamplerConfig.Builder sampling(JsonNode body, SamplerConfig.Builder sampler) {
        Double temperature = optionalNumber(body, "temperature", 0, 2);
        if (temperature != null) {
            sampler.temperature(temperature.floatValue());
        }
        Double topP = optionalNumber(body, "top_p", 0, 1);
        if (topP != null) {
            if (topP == 0) {
                throw ApiException.badParameter("top_p", "top_p must be in (0, 1]");
            }
            sampler.topP(topP.floatValue());
        }
        JsonNode seed = body.get("seed");
        if (seed != null && !seed.isNull()) {
            if (!seed.isIntegralNumber() || !seed.canConvertToLong()) {
                throw ApiException.badParameter("seed", "seed must be an integer");
            }
            sampler.seed(seed.longValue());
        } else {
            sampler.seed(ThreadLocalRandom.current().nextLong());
        }
        return sampler;
    }
}
