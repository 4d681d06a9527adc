package dev.tandem.llm.sampling;

/**
 * How a {@link Sampler} picks each token; every knob's "off" value leaves the logits as they are.
 *
 * @param temperature       0 for greedy (the largest logit after the penalties, the first index on
 *                          ties), else the softmax temperature of the final draw; finite, {@code >= 0}
 * @param topK              keep the {@code topK} largest logits; 0 is off
 * @param topP              keep the smallest prefix (largest first) holding at least {@code topP} of the
 *                          mass, measured at temperature 1; in (0, 1], 1 is off
 * @param minP              keep the tokens whose probability is at least {@code minP} times the
 *                          largest's, at temperature 1; in [0, 1], 0 is off
 * @param repetitionPenalty llama.cpp's: a penalised logit {@code l} becomes {@code l > 0 ? l / p : l * p};
 *                          finite, {@code > 0}, 1 is off
 * @param repeatLastN       the penalty window: the last {@code repeatLastN} tokens are penalised;
 *                          {@code >= 0}, 0 turns every penalty off
 * @param presencePenalty   OpenAI's: subtracted from the logit of each token present in the window;
 *                          finite, 0 is off
 * @param frequencyPenalty  OpenAI's: subtracted once per occurrence in the window; finite, 0 is off
 * @param penalizePrompt    whether the prompt's last tokens fill the window before the first draw
 *                          (llama.cpp does this)
 * @param seed              the draws of token {@code k} depend on {@code (seed, k)} only
 * @param logitBias         OpenAI's {@code logit_bias}: added to the logits of these tokens before
 *                          the penalties and the draw ({@code -100} bans one, {@code 100} all but
 *                          forces it); empty for none
 */
public record SamplerConfig(
        float temperature,
        int topK,
        float topP,
        float minP,
        float repetitionPenalty,
        int repeatLastN,
        float presencePenalty,
        float frequencyPenalty,
        boolean penalizePrompt,
        long seed,
        java.util.Map<Integer, Float> logitBias) {

    /** Greedy decoding, no penalties. */
    public static final SamplerConfig GREEDY = builder().temperature(0).topK(0).topP(1).minP(0).build();

    public SamplerConfig {
        if (!(temperature >= 0) || Float.isInfinite(temperature)) {
            throw new IllegalArgumentException("temperature = " + temperature + " must be finite and >= 0");
        }
        if (topK < 0) {
            throw new IllegalArgumentException("topK = " + topK + " must be >= 0 (0 is off)");
        }
        if (!(topP > 0 && topP <= 1)) {
            throw new IllegalArgumentException("topP = " + topP + " must be in (0, 1] (1 is off)");
        }
        if (!(minP >= 0 && minP <= 1)) {
            throw new IllegalArgumentException("minP = " + minP + " must be in [0, 1] (0 is off)");
        }
        if (!(repetitionPenalty > 0) || Float.isInfinite(repetitionPenalty)) {
            throw new IllegalArgumentException("repetitionPenalty = " + repetitionPenalty
                    + " must be finite and > 0 (1 is off)");
        }
        if (repeatLastN < 0) {
            throw new IllegalArgumentException("repeatLastN = " + repeatLastN + " must be >= 0 (0 is off)");
        }
        if (!Float.isFinite(presencePenalty)) {
            throw new IllegalArgumentException("presencePenalty = " + presencePenalty + " must be finite");
        }
        if (!Float.isFinite(frequencyPenalty)) {
            throw new IllegalArgumentException("frequencyPenalty = " + frequencyPenalty + " must be finite");
        }
        logitBias = logitBias == null ? java.util.Map.of() : java.util.Map.copyOf(logitBias);
        for (var bias : logitBias.entrySet()) {
            if (bias.getKey() < 0 || !Float.isFinite(bias.getValue())) {
                throw new IllegalArgumentException("logit bias " + bias + " needs a token >= 0 and a finite value");
            }
        }
    }

    /**
     * A builder starting from llama.cpp's defaults: temperature 0.8, top-k 40, top-p 0.95, min-p
     * 0.05, no repetition, presence or frequency penalty, a window of 64 that the prompt fills, seed 0.
     */
    public static Builder builder() {
        return new Builder();
    }

    /** A builder starting from this configuration. */
    public Builder toBuilder() {
        return new Builder()
                .temperature(temperature)
                .topK(topK)
                .topP(topP)
                .minP(minP)
                .repetitionPenalty(repetitionPenalty)
                .repeatLastN(repeatLastN)
                .presencePenalty(presencePenalty)
                .frequencyPenalty(frequencyPenalty)
                .penalizePrompt(penalizePrompt)
                .seed(seed)
                .logitBias(logitBias);
    }

    public boolean greedy() {
        return temperature == 0f;
    }

    /** Whether any penalty changes a logit. */
    public boolean penalizes() {
        return repeatLastN > 0 && (repetitionPenalty != 1f || presencePenalty != 0f || frequencyPenalty != 0f);
    }

    /** Collects the fields; {@link #build} validates them. */
    public static final class Builder {
        private float temperature = 0.8f;
        private int topK = 40;
        private float topP = 0.95f;
        private float minP = 0.05f;
        private float repetitionPenalty = 1f;
        private int repeatLastN = 64;
        private float presencePenalty = 0f;
        private float frequencyPenalty = 0f;
        private boolean penalizePrompt = true;
        private long seed = 0;
        private java.util.Map<Integer, Float> logitBias = java.util.Map.of();

        private Builder() {}

        public Builder temperature(float value) {
            temperature = value;
            return this;
        }

        public Builder topK(int value) {
            topK = value;
            return this;
        }

        public Builder topP(float value) {
            topP = value;
            return this;
        }

        public Builder minP(float value) {
            minP = value;
            return this;
        }

        public Builder repetitionPenalty(float value) {
            repetitionPenalty = value;
            return this;
        }

        public Builder repeatLastN(int value) {
            repeatLastN = value;
            return this;
        }

        public Builder presencePenalty(float value) {
            presencePenalty = value;
            return this;
        }

        public Builder frequencyPenalty(float value) {
            frequencyPenalty = value;
            return this;
        }

        public Builder penalizePrompt(boolean value) {
            penalizePrompt = value;
            return this;
        }

        public Builder seed(long value) {
            seed = value;
            return this;
        }

        /** Token id to the bias added to its logit. */
        public Builder logitBias(java.util.Map<Integer, Float> value) {
            logitBias = value;
            return this;
        }

        /** @throws IllegalArgumentException naming the first field out of range */
        public SamplerConfig build() {
            return new SamplerConfig(temperature, topK, topP, minP, repetitionPenalty, repeatLastN,
                    presencePenalty, frequencyPenalty, penalizePrompt, seed, logitBias);
        }
    }
}
