package dev.tandem.device;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** The card-mark advice: only for the card-table collectors, and only without conditional marks. */
class CardMarksTest {

    @Test
    void theParallelAndSerialCollectorsWithoutConditionalMarksAreAdvisedAndNamed() {
        assertThat(CardMarks.advice(true, false, false)).contains("parallel collector", "-XX:+UseCondCardMark");
        assertThat(CardMarks.advice(false, true, false)).contains("serial collector", "-XX:+UseCondCardMark");
    }

    @Test
    void conditionalMarksOrAnotherCollectorNeedNoAdvice() {
        assertThat(CardMarks.advice(true, false, true)).isNull();
        assertThat(CardMarks.advice(false, true, true)).isNull();
        assertThat(CardMarks.advice(false, false, false)).isNull(); // G1, ZGC, Shenandoah
    }

    @Test
    void checkingThisJvmTwiceDoesNotThrow() {
        CardMarks.adviseOnce();
        CardMarks.adviseOnce();
    }
}
