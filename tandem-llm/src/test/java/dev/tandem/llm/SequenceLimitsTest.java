package dev.tandem.llm;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tandem.llm.SequenceLimits.Verdict;
import java.util.BitSet;
import org.junit.jupiter.api.Test;

/** The one place that says when a generation ends. */
class SequenceLimitsTest {
    private static final int EOS = 2;
    private static final int END_OF_TURN = 7;

    private static SequenceLimits limits() {
        BitSet ends = new BitSet();
        ends.set(EOS);
        ends.set(END_OF_TURN);
        return new SequenceLimits(10, ends);
    }

    @Test
    void theContextLeavesRoomForWhatThePromptDoesNotTake() {
        SequenceLimits limits = limits();
        assertThat(limits.contextLength()).isEqualTo(10);
        assertThat(limits.room(1)).isEqualTo(9);
        assertThat(limits.room(9)).isEqualTo(1);
        assertThatThrownBy(() -> limits.room(10)).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("prompt of 10 tokens leaves no room in the context of 10");
        assertThat(limits.maxTokens(4, 3)).isEqualTo(3);
        assertThat(limits.maxTokens(4, 6)).isEqualTo(6);
        assertThat(limits.maxTokens(4, 7)).as("capped by the room").isEqualTo(6);
        assertThatThrownBy(() -> limits.maxTokens(11, 1)).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void endOfGenerationTokensEndItUnlessIgnoredAndTheLimitEndsItAtItsLastToken() {
        SequenceLimits limits = limits();
        assertThat(limits.endsGeneration(EOS)).isTrue();
        assertThat(limits.endsGeneration(END_OF_TURN)).isTrue();
        assertThat(limits.endsGeneration(3)).isFalse();
        assertThat(limits.endsGeneration(-1)).isFalse();
        assertThat(limits.after(EOS, 1, 5, false)).isEqualTo(Verdict.END_OF_GENERATION);
        assertThat(limits.after(END_OF_TURN, 5, 5, false)).as("the end token wins at the limit")
                .isEqualTo(Verdict.END_OF_GENERATION);
        assertThat(limits.after(EOS, 1, 5, true)).isEqualTo(Verdict.CONTINUE);
        assertThat(limits.after(EOS, 5, 5, true)).isEqualTo(Verdict.LENGTH);
        assertThat(limits.after(3, 4, 5, false)).isEqualTo(Verdict.CONTINUE);
        assertThat(limits.after(3, 5, 5, false)).isEqualTo(Verdict.LENGTH);
    }

    @Test
    void tokenZeroCanEndAGeneration() {
        BitSet ends = new BitSet();
        ends.set(0);
        assertThat(new SequenceLimits(10, ends).endsGeneration(0)).isTrue();
    }

    @Test
    void itKeepsItsOwnCopyOfTheEndTokens() {
        BitSet ends = new BitSet();
        ends.set(EOS);
        SequenceLimits limits = new SequenceLimits(10, ends);
        ends.set(3);
        assertThat(limits.endsGeneration(3)).isFalse();
    }
}
