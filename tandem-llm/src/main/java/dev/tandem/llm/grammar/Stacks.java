package dev.tandem.llm.grammar;

import dev.tandem.llm.grammar.GrammarTable.Frame;
import java.util.Arrays;
import java.util.LinkedHashSet;

/**
 * A state of the grammar's automaton: the set of expanded stacks the input so far may be in, and
 * whether the input may end here. Immutable; equal sets are equal states (the key of the masks'
 * cache). Two equal sets listed in another order compare unequal, which costs a cache miss only.
 */
final class Stacks {
    static final Stacks DEAD = new Stacks(new Frame[0], false);

    final Frame[] frames;
    final boolean accepting;
    private final int hash;

    private Stacks(Frame[] frames, boolean accepting) {
        this.frames = frames;
        this.accepting = accepting;
        this.hash = Arrays.hashCode(frames) * 2 + (accepting ? 1 : 0);
    }

    /** No stack and the input may not end: nothing can follow. */
    boolean isDead() {
        return frames.length == 0 && !accepting;
    }

    /** Nothing more can be consumed. */
    boolean isComplete() {
        return frames.length == 0;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Stacks s && s.hash == hash && s.accepting == accepting && Arrays.equals(frames, s.frames);
    }

    @Override
    public int hashCode() {
        return hash;
    }

    /** Collects the stacks of a step; duplicates are dropped. */
    static final class Builder {
        private final LinkedHashSet<Frame> frames = new LinkedHashSet<>();
        boolean accepting;

        void add(Frame f) {
            frames.add(f);
        }

        Stacks build() {
            if (frames.isEmpty()) {
                return accepting ? new Stacks(new Frame[0], true) : DEAD;
            }
            return new Stacks(frames.toArray(Frame[]::new), accepting);
        }
    }
}
