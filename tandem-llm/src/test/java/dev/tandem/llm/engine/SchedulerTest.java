package dev.tandem.llm.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import org.junit.jupiter.api.Test;

/** The scheduler alone, as a function of its state: no worker, no model, no threads. */
class SchedulerTest {
    private static final int BLOCK = 4;

    /** A sequence whose reader's state the test sets. */
    static final class Seq extends Sequence {
        boolean ended;
        long unread;

        Seq(int[] prompt, int maxTokens) {
            super(prompt, maxTokens, BLOCK, false);
        }

        @Override
        protected boolean ended() {
            return ended;
        }

        @Override
        protected long unread() {
            return unread;
        }
    }

    private static int[] tokens(int n, int first) {
        int[] t = new int[n];
        for (int i = 0; i < n; i++) {
            t[i] = first + i;
        }
        return t;
    }

    private static Scheduler<Seq> scheduler(int maxBatch, int budget, int blocks) {
        return new Scheduler<>(maxBatch, budget, 0, 4, true, new KvBlockPool(blocks, BLOCK, true));
    }

    @Test
    void aStepDecodesTheBatchThenPrefillsShortestPromptFirstInTheRemainingBudget() {
        Scheduler<Seq> s = scheduler(4, 8, 64);
        Seq longer = new Seq(tokens(10, 100), 5);
        Seq shorter = new Seq(tokens(3, 200), 5);
        s.enqueue(longer);
        s.enqueue(shorter);
        assertThat(s.admit()).containsExactly(longer, shorter);

        StepPlan first = s.plan();
        // the shorter prompt whole (3 rows, its last row sampled), then 5 rows of the longer one
        assertThat(first.rows()).isEqualTo(8);
        assertThat(first.prefillRows()).isEqualTo(8);
        assertThat(first.columns()).isEqualTo(1);
        assertThat(first.sequence(0)).isSameAs(shorter);
        assertThat(first.prefillTokens).startsWith(200, 201, 202, 100, 101, 102, 103, 104);

        StepPlan second = s.plan();
        // the shorter one decodes (1 row), the longer one's remaining 5 prompt rows end its prompt
        assertThat(second.decodeRows()).isEqualTo(1);
        assertThat(second.prefillRows()).isEqualTo(5);
        assertThat(second.columns()).isEqualTo(2);
        assertThat(second.sequence(0)).isSameAs(longer);
        assertThat(second.sequence(1)).isSameAs(shorter);
        assertThat(second.position[5]).isEqualTo(3); // the shorter one's next position
        assertThat(s.mixedSteps()).isEqualTo(1);
    }

    /**
     * promptRows bounds the prompt rows of a step in which sequences decode; a step with none
     * decoding takes the whole budget, so a lone prompt is not slowed.
     */
    @Test
    void promptRowsBoundThePromptsOfAStepWithDecodersOnly() {
        Scheduler<Seq> s = new Scheduler<>(4, 16, 3, 4, true, new KvBlockPool(64, BLOCK, true));
        Seq first = new Seq(tokens(2, 100), 8);
        s.enqueue(first);
        s.admit();
        StepPlan alone = s.plan();
        assertThat(alone.prefillRows()).isEqualTo(2); // its whole prompt, nobody decoding
        Seq joining = new Seq(tokens(12, 200), 4);
        s.enqueue(joining);
        s.admit();
        StepPlan mixed = s.plan();
        assertThat(mixed.decodeRows()).isEqualTo(1);
        assertThat(mixed.prefillRows()).as("bounded while one decodes").isEqualTo(3);
        StepPlan next = s.plan();
        assertThat(next.prefillRows()).isEqualTo(3);
        assertThat(next.position[3]).as("the decoder's next position").isEqualTo(3);

        Scheduler<Seq> lone = new Scheduler<>(4, 16, 3, 4, true, new KvBlockPool(64, BLOCK, true));
        Seq big = new Seq(tokens(12, 300), 4);
        lone.enqueue(big);
        lone.admit();
        assertThat(lone.plan().prefillRows()).as("no decoder: the whole budget").isEqualTo(12);
        assertThatThrownBy(() -> new Scheduler<Seq>(4, 16, -1, 4, true, new KvBlockPool(64, BLOCK, true)))
                .hasMessageContaining("promptRows = -1");
    }

    @Test
    void admissionIsInOrderSoALargeSequenceIsNotOvertaken() {
        Scheduler<Seq> s = scheduler(4, 16, 8);
        Seq small = new Seq(tokens(4, 0), 4); // 2 blocks
        Seq large = new Seq(tokens(20, 0), 8); // 7 blocks
        Seq later = new Seq(tokens(2, 0), 2); // 1 block
        s.enqueue(small);
        s.enqueue(large);
        s.enqueue(later);
        assertThat(s.admit()).containsExactly(small);
        assertThat(s.reserved()).isEqualTo(2);
        // the large one waits for room, and the one behind it waits with it
        assertThat(s.queued()).containsExactly(large, later);
        small.ended = true;
        assertThat(s.dropEnded()).containsExactly(small);
        assertThat(s.admit()).containsExactly(large, later);
        assertThat(s.reserved()).isEqualTo(8);
    }

    @Test
    void noFreeSlotKeepsTheQueueWaiting() {
        Scheduler<Seq> s = scheduler(1, 4, 64);
        Seq a = new Seq(tokens(2, 0), 2);
        Seq b = new Seq(tokens(2, 0), 2);
        // none waiting and room to join now: it may queue even when no one may wait
        assertThat(s.mayQueue(a, 0)).isTrue();
        s.enqueue(a);
        assertThat(s.mayQueue(b, 1)).isFalse();
        assertThat(s.mayQueue(b, 2)).isTrue();
        s.enqueue(b);
        assertThat(s.admit()).containsExactly(a);
        assertThat(s.admit()).isEmpty();
    }

    @Test
    void aReaderThatFallsBehindSitsOutTheSteps() {
        Scheduler<Seq> s = scheduler(2, 8, 64);
        Seq slow = new Seq(tokens(1, 0), 10);
        s.enqueue(slow);
        s.admit();
        assertThat(s.plan().columns()).isEqualTo(1);
        slow.unread = 4; // the stream buffer is 4
        assertThat(s.plan()).isNull();
        assertThat(s.pausedRows()).isZero(); // nothing planned: not counted
        slow.unread = 0;
        s.delivered(slow);
        assertThat(s.plan().decodeRows()).isEqualTo(1);
    }

    @Test
    void aSequenceIsPlannedNoFurtherThanItsTokenLimit() {
        Scheduler<Seq> s = scheduler(2, 8, 64);
        Seq a = new Seq(tokens(3, 0), 2);
        s.enqueue(a);
        s.admit();
        assertThat(s.plan().columns()).isEqualTo(1); // token 0
        assertThat(s.plan().columns()).isEqualTo(1); // token 1
        assertThat(s.plan()).isNull();
    }

    @Test
    void aPromptThatBeginsWithCachedBlocksPrefillsOnlyTheRest() {
        Scheduler<Seq> s = scheduler(2, 32, 64);
        int[] prompt = tokens(10, 7);
        Seq first = new Seq(prompt.clone(), 3);
        s.enqueue(first);
        s.admit();
        StepPlan p = s.plan();
        assertThat(p.prefillRows()).isEqualTo(10);
        first.ended = true;
        s.dropEnded();

        int[] sharing = tokens(12, 7); // the same first 10 tokens, two more
        Seq second = new Seq(sharing, 3);
        s.enqueue(second);
        s.admit();
        assertThat(second.cachedTokens()).isEqualTo(8); // two full blocks of 4
        StepPlan q = s.plan();
        assertThat(q.prefillRows()).isEqualTo(4);
        assertThat(q.position[0]).isEqualTo(8);
        assertThat(s.cachedPromptTokens()).isEqualTo(8);
        assertThat(s.computedPromptTokens()).isEqualTo(14);
    }

    @Test
    void aWholeCachedPromptStillComputesItsLastToken() {
        Scheduler<Seq> s = scheduler(2, 32, 64);
        Seq first = new Seq(tokens(8, 1), 1);
        s.enqueue(first);
        s.admit();
        s.plan();
        first.ended = true;
        s.dropEnded();
        Seq again = new Seq(tokens(8, 1), 1);
        s.enqueue(again);
        s.admit();
        // block 1 holds the last prompt token, whose logits give the first token: computed again
        assertThat(again.cachedTokens()).isEqualTo(4);
        assertThat(s.plan().prefillRows()).isEqualTo(4);
    }

    @Test
    void aSequenceThatCouldNeverFitIsRefused() {
        Scheduler<Seq> s = scheduler(2, 8, 2);
        assertThatThrownBy(() -> s.enqueue(new Seq(tokens(9, 0), 4))).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("needs 3 blocks");
    }

    @Test
    void shortestFirstMeansFewestPromptTokensLeftAndDecodeRowsFollowThePrompts() {
        Scheduler<Seq> s = scheduler(2, 9, 64);
        Seq a = new Seq(tokens(12, 100), 3);
        s.enqueue(a);
        s.admit();
        StepPlan first = s.plan(); // 9 rows of its 12
        assertThat(first.prefillRows()).isEqualTo(9);
        assertThat(first.columns()).isZero();
        Seq b = new Seq(tokens(6, 200), 3);
        s.enqueue(b);
        s.admit();
        // a has 3 left, b 6: a first, then 6 of b's
        StepPlan second = s.plan();
        assertThat(java.util.Arrays.copyOf(second.position, 9)).containsExactly(9, 10, 11, 0, 1, 2, 3, 4, 5);
        assertThat(second.prefillTokens).startsWith(109, 110, 111, 200);
        assertThat(second.columns()).isEqualTo(2);
        assertThat(second.sequence(0)).isSameAs(a);
        assertThat(second.sequence(1)).isSameAs(b);
        assertThat(second.tables[0]).isSameAs(a.table);
        assertThat(second.tables[3]).isSameAs(b.table);

        StepPlan third = s.plan(); // both decode, in admission order, at the position after their last token
        assertThat(third.prefillRows()).isZero();
        assertThat(third.decodeRows()).isEqualTo(2);
        assertThat(third.position[0]).isEqualTo(12);
        assertThat(third.position[1]).isEqualTo(6);
        assertThat(third.decodeSlots).containsExactly(a.slot, b.slot);
        assertThat(third.logitRows[1]).isEqualTo(1);
        assertThat(s.steps()).isEqualTo(3);
        assertThat(s.prefillRows()).isEqualTo(18);
        assertThat(s.decodeRows()).isEqualTo(2);
        assertThat(s.mixedSteps()).isZero();
    }

    @Test
    void tokensBuiltButNotYetDeliveredCountAgainstTheStreamBuffer() {
        Scheduler<Seq> s = scheduler(2, 8, 64);
        Seq a = new Seq(tokens(1, 0), 10);
        Seq b = new Seq(tokens(1, 50), 10);
        s.enqueue(a);
        s.enqueue(b);
        s.admit();
        for (int step = 0; step < 4; step++) {
            assertThat(s.plan().columns()).isEqualTo(2); // 4 built, none delivered
        }
        s.delivered(b);
        StepPlan only = s.plan(); // a holds 4 undelivered (the buffer): it sits out; b goes on
        assertThat(only.columns()).isEqualTo(1);
        assertThat(only.sequence(0)).isSameAs(b);
        assertThat(s.pausedRows()).isEqualTo(1);
    }

    @Test
    void generatedTokensRegisterTheirBlocksSoAConversationsNextTurnFindsThem() {
        Scheduler<Seq> s = scheduler(2, 32, 64);
        Seq turn = new Seq(tokens(6, 10), 6);
        s.enqueue(turn);
        s.admit();
        int[] generated = {90, 91, 92, 93, 94, 95};
        for (int k = 0; k < 6; k++) {
            StepPlan p = s.plan();
            assertThat(p.columns()).isEqualTo(1);
            s.delivered(turn);
            s.accepted(turn, generated[k]);
        }
        assertThat(s.tokens()).isEqualTo(6);
        assertThat(s.plan()).isNull();
        turn.ended = true;
        s.dropEnded();
        assertThat(turn.hasLeft()).isTrue();
        // prompt + reply = 12 tokens; the last reply token's keys are never written, so blocks 0-1 (8 tokens)
        // are full and known; the next turn resends all 12 and more
        int[] next = new int[14];
        System.arraycopy(tokens(6, 10), 0, next, 0, 6);
        System.arraycopy(generated, 0, next, 6, 6);
        next[12] = 5;
        next[13] = 6;
        Seq again = new Seq(next, 2);
        s.enqueue(again);
        s.admit();
        assertThat(again.cachedTokens()).isEqualTo(8);
    }

    @Test
    void clearEmptiesTheQueueAndTheBatchAndReturnsEveryone() {
        Scheduler<Seq> s = scheduler(1, 4, 64);
        Seq in = new Seq(tokens(2, 0), 2);
        Seq waiting = new Seq(tokens(2, 0), 2);
        s.enqueue(in);
        s.enqueue(waiting);
        s.admit();
        assertThat(s.idle()).isFalse();
        assertThat(s.clear()).containsExactly(waiting, in);
        assertThat(in.hasLeft()).isTrue();
        assertThat(waiting.hasLeft()).as("never joined").isFalse();
        assertThat(s.idle()).isTrue();
        assertThat(s.maxBatch()).isEqualTo(1);
    }

    @Test
    void itsShapeIsCheckedAndASequenceThatFillsThePoolExactlyIsQueued() {
        assertThatThrownBy(() -> scheduler(4, 4, 8)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new Scheduler<Seq>(1, 4, 0, 0, true, new KvBlockPool(4, BLOCK, true)))
                .isInstanceOf(IllegalArgumentException.class);
        Scheduler<Seq> s = scheduler(1, 4, 2);
        Seq whole = new Seq(tokens(5, 0), 4); // 8 positions: exactly 2 blocks
        s.enqueue(whole);
        assertThat(s.admit()).containsExactly(whole);
    }

    /**
     * Random sequences join, step, receive tokens, end and leave: the reservations always cover the
     * blocks held, the budget and the limits hold in every plan, and when all have left the pool is
     * back to idle (every block free or cached).
     */
    @Property(tries = 100)
    void randomWorkloadsKeepTheInvariantsAndEndIdle(@ForAll long seed) {
        Random random = new Random(seed);
        int maxBatch = 1 + random.nextInt(4);
        int budget = maxBatch + 1 + random.nextInt(12);
        Scheduler<Seq> s = scheduler(maxBatch, budget, 24 + random.nextInt(24));
        List<Seq> all = new ArrayList<>();
        for (int round = 0; round < 60; round++) {
            if (random.nextInt(3) == 0) {
                // a few prompt families, so prefixes are shared
                int[] prompt = tokens(1 + random.nextInt(14), 100 * random.nextInt(3));
                Seq q = new Seq(prompt, 1 + random.nextInt(6));
                if (q.blocksNeeded() <= s.pool().blocks() && s.mayQueue(q, 8)) {
                    s.enqueue(q);
                    all.add(q);
                }
            }
            s.dropEnded();
            s.admit();
            StepPlan plan = s.plan();
            if (plan != null) {
                assertThat(plan.rows()).isLessThanOrEqualTo(budget);
                for (int c = 0; c < plan.columns(); c++) {
                    Seq q = (Seq) plan.sequence(c);
                    assertThat(q.built).isLessThanOrEqualTo(q.maxTokens());
                    s.delivered(q);
                    s.accepted(q, 1000 + random.nextInt(5));
                    if (q.delivered() == q.maxTokens() || random.nextInt(10) == 0) {
                        q.ended = true;
                    }
                }
            }
            int reserved = 0;
            for (Seq q : s.active()) {
                reserved += q.blocksNeeded();
                assertThat(q.blockCount).isLessThanOrEqualTo(q.blocksNeeded());
            }
            assertThat(s.reserved()).isEqualTo(reserved);
            assertThat(s.pool().held()).isLessThanOrEqualTo(reserved);
        }
        s.clear();
        assertThat(s.idle()).isTrue();
        assertThat(s.reserved()).isZero();
        s.pool().checkIdle();
        assertThat(all).allMatch(q -> q.hasLeft() || q.slot < 0);
    }
}
