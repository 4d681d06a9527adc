package dev.tandem.llm.grammar;

import dev.tandem.llm.grammar.Grammar.Alt;
import dev.tandem.llm.grammar.Grammar.ByteSet;
import dev.tandem.llm.grammar.Grammar.Node;
import dev.tandem.llm.grammar.Grammar.Rule;
import dev.tandem.llm.grammar.Grammar.Seq;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;

/**
 * A grammar compiled into flat rules, and the pushdown automaton that runs them (llama.cpp's
 * {@code llama-grammar.cpp} design, over bytes).
 *
 * <h2>Implementation Overview</h2>
 *
 * <p><b>Code.</b> Each rule is a list of alternatives; each alternative a run of elements in
 * {@link #code} ended by {@link #END}. An element {@code >= 0} is a byte set (an index into
 * {@link #sets}), one {@code < 0} other than {@code END} refers to rule {@code -(e + 1)}. Nested
 * alternatives inside a sequence become anonymous rules.
 *
 * <p><b>Stacks.</b> A position in the grammar is a stack of code positions ({@link Frame}, an
 * immutable linked list shared between stacks): the top is the element to match next, the ones
 * below are where to go on when the top's rule ends. A stack is kept <em>expanded</em>: its top
 * is always a byte set (a rule reference on top is replaced by one stack per alternative of the
 * rule; an {@code END} on top pops). A reference that is the last element of its alternative
 * pushes no return position (a tail call), so right recursion — how repetition is written — runs
 * in constant stack depth. The automaton's state ({@link Stacks}) is the set of expanded stacks
 * that the input so far can be in, plus whether the input may end here (some stack emptied).
 * Consuming a byte keeps the stacks whose top set holds it, moves each past its top and expands.
 *
 * <p><b>Invariants checked at compile time.</b> No rule reaches itself without consuming a byte
 * (left recursion would make expansion loop); every rule left can produce a finite string
 * (alternatives through rules that cannot are dropped, and a grammar whose root cannot is refused),
 * so every non-empty state can still reach an accepting one.
 */
final class GrammarTable {
    static final int END = Integer.MIN_VALUE;
    /** More code than this is refused: a schema with huge bounds or very many properties. */
    static final int MAX_CODE = 1 << 21;

    final int[] code;
    final int[][] alternatives;
    final long[][] sets;
    final String[] names;
    final int root;

    private GrammarTable(int[] code, int[][] alternatives, long[][] sets, String[] names, int root) {
        this.code = code;
        this.alternatives = alternatives;
        this.sets = sets;
        this.names = names;
        this.root = root;
    }

    // ---- compiling ---------------------------------------------------------------------------------

    static GrammarTable compile(Grammar grammar) {
        return new Compiler().run(new Rule("root", grammar.root()));
    }

    /** An atom of a normalised alternative: a byte set or a rule. */
    private static final class Compiler {
        final Map<Rule, Integer> ids = new IdentityHashMap<>();
        final List<Rule> rules = new ArrayList<>();
        final Map<Alt, Rule> anonymous = new IdentityHashMap<>();
        final Map<ByteSet, Integer> setIds = new HashMap<>();
        final List<long[]> sets = new ArrayList<>();
        final List<List<int[]>> bodies = new ArrayList<>(); // rule -> alternatives of atoms
        long size;

        GrammarTable run(Rule root) {
            id(root);
            for (int r = 0; r < rules.size(); r++) { // rules grows as bodies name new ones
                List<int[]> alts = new ArrayList<>();
                for (List<Node> alt : alternatives(rules.get(r).body())) {
                    int[] atoms = new int[alt.size()];
                    for (int i = 0; i < atoms.length; i++) {
                        atoms[i] = atom(alt.get(i));
                    }
                    size += atoms.length + 1;
                    if (size > MAX_CODE) {
                        throw new GrammarException(null, null, "the grammar is too large (over " + MAX_CODE
                                + " elements): lower its bounds (maxLength, maxItems) or its number of properties");
                    }
                    alts.add(atoms);
                }
                bodies.add(alts);
            }
            boolean[] productive = productive();
            if (!productive[0]) {
                boolean refs = rules.stream().anyMatch(r -> r.name.startsWith("$ref "));
                throw new GrammarException(refs ? "$ref" : null, null, "the grammar accepts no finite text (a schema"
                        + " that must contain itself, or a $ref that refers to itself without consuming anything)");
            }
            for (int r = 0; r < bodies.size(); r++) {
                bodies.get(r).removeIf(atoms -> !allProductive(atoms, productive));
            }
            checkLeftRecursion();
            return emit();
        }

        int id(Rule rule) {
            Integer id = ids.get(rule);
            if (id == null) {
                id = rules.size();
                ids.put(rule, id);
                rules.add(rule);
            }
            return id;
        }

        int atom(Node node) {
            return switch (node) {
                case ByteSet s -> setIds.computeIfAbsent(s, k -> {
                    sets.add(k.bits().clone());
                    return sets.size() - 1;
                });
                case Rule r -> -(id(r) + 1);
                default -> throw new AssertionError(node);
            };
        }

        /** A body as alternatives of atoms (byte sets and rules); an Alt inside a Seq becomes a rule. */
        List<List<Node>> alternatives(Node body) {
            List<List<Node>> out = new ArrayList<>();
            if (body instanceof Alt a) {
                for (Node n : a.alternatives()) {
                    if (n instanceof Alt) {
                        out.addAll(alternatives(n));
                    } else {
                        List<Node> atoms = new ArrayList<>();
                        flatten(n, atoms);
                        out.add(atoms);
                    }
                }
            } else {
                List<Node> atoms = new ArrayList<>();
                flatten(body, atoms);
                out.add(atoms);
            }
            return out;
        }

        void flatten(Node node, List<Node> atoms) {
            switch (node) {
                case Seq s -> {
                    for (Node part : s.parts()) {
                        flatten(part, atoms);
                    }
                }
                case Alt a -> atoms.add(anonymous.computeIfAbsent(a, k -> new Rule("(alternatives)", k)));
                default -> atoms.add(node);
            }
        }

        boolean[] productive() {
            boolean[] productive = new boolean[bodies.size()];
            boolean changed = true;
            while (changed) {
                changed = false;
                for (int r = 0; r < bodies.size(); r++) {
                    if (productive[r]) {
                        continue;
                    }
                    for (int[] atoms : bodies.get(r)) {
                        if (allProductive(atoms, productive)) {
                            productive[r] = true;
                            changed = true;
                            break;
                        }
                    }
                }
            }
            return productive;
        }

        static boolean allProductive(int[] atoms, boolean[] productive) {
            for (int a : atoms) {
                if (a < 0 && !productive[-(a + 1)]) {
                    return false;
                }
            }
            return true;
        }

        void checkLeftRecursion() {
            int n = bodies.size();
            boolean[] nullable = new boolean[n];
            boolean changed = true;
            while (changed) {
                changed = false;
                for (int r = 0; r < n; r++) {
                    if (nullable[r]) {
                        continue;
                    }
                    for (int[] atoms : bodies.get(r)) {
                        boolean all = true;
                        for (int a : atoms) {
                            if (a >= 0 || !nullable[-(a + 1)]) {
                                all = false;
                                break;
                            }
                        }
                        if (all) {
                            nullable[r] = true;
                            changed = true;
                            break;
                        }
                    }
                }
            }
            // edges r -> s where s can start r without a byte consumed before it
            int[][] edges = new int[n][];
            for (int r = 0; r < n; r++) {
                List<Integer> to = new ArrayList<>();
                for (int[] atoms : bodies.get(r)) {
                    for (int a : atoms) {
                        if (a >= 0) {
                            break;
                        }
                        to.add(-(a + 1));
                        if (!nullable[-(a + 1)]) {
                            break;
                        }
                    }
                }
                edges[r] = to.stream().mapToInt(Integer::intValue).toArray();
            }
            byte[] mark = new byte[n]; // 0 new, 1 on the path, 2 done
            for (int start = 0; start < n; start++) {
                if (mark[start] != 0) {
                    continue;
                }
                // iterative DFS: (rule, next edge index)
                ArrayDeque<int[]> path = new ArrayDeque<>();
                path.push(new int[] {start, 0});
                mark[start] = 1;
                while (!path.isEmpty()) {
                    int[] top = path.peek();
                    if (top[1] < edges[top[0]].length) {
                        int s = edges[top[0]][top[1]++];
                        if (mark[s] == 1) {
                            throw new GrammarException("$ref", null, "the grammar refers to itself without consuming"
                                    + " anything (left recursion through " + rules.get(s).name + ")");
                        }
                        if (mark[s] == 0) {
                            mark[s] = 1;
                            path.push(new int[] {s, 0});
                        }
                    } else {
                        mark[top[0]] = 2;
                        path.pop();
                    }
                }
            }
        }

        GrammarTable emit() {
            int[] code = new int[(int) size];
            int at = 0;
            int[][] starts = new int[bodies.size()][];
            String[] names = new String[bodies.size()];
            for (int r = 0; r < bodies.size(); r++) {
                List<int[]> alts = bodies.get(r);
                starts[r] = new int[alts.size()];
                names[r] = rules.get(r).name;
                for (int i = 0; i < alts.size(); i++) {
                    starts[r][i] = at;
                    for (int a : alts.get(i)) {
                        code[at++] = a;
                    }
                    code[at++] = END;
                }
            }
            return new GrammarTable(Arrays.copyOf(code, at), starts, sets.toArray(long[][]::new), names, 0);
        }
    }

    // ---- running ----------------------------------------------------------------------------------

    /** One stack: the code position to match next, and the stack below it. Immutable. */
    static final class Frame {
        final int pos;
        final Frame next;
        private final int hash;
        private final int depth;

        Frame(int pos, Frame next) {
            this.pos = pos;
            this.next = next;
            this.hash = 31 * (next == null ? 0 : next.hash) + pos;
            this.depth = next == null ? 1 : next.depth + 1;
        }

        @Override
        public boolean equals(Object o) {
            if (this == o) {
                return true;
            }
            if (!(o instanceof Frame f) || f.hash != hash || f.depth != depth) {
                return false;
            }
            Frame a = this;
            Frame b = f;
            while (a != null) {
                if (a == b) {
                    return true;
                }
                if (a.pos != b.pos) {
                    return false;
                }
                a = a.next;
                b = b.next;
            }
            return true;
        }

        @Override
        public int hashCode() {
            return hash;
        }
    }

    /** The start state: the root rule's stacks, expanded. */
    Stacks start() {
        Stacks.Builder out = new Stacks.Builder();
        for (int s : alternatives[root]) {
            expand(new Frame(s, null), out);
        }
        return out.build();
    }

    /** The state after byte {@code b}; {@link Stacks#isDead()} when no stack takes it. */
    Stacks advance(Stacks state, int b) {
        Stacks.Builder out = new Stacks.Builder();
        for (Frame f : state.frames) {
            long[] set = sets[code[f.pos]];
            if ((set[b >>> 6] >>> (b & 63) & 1L) != 0) {
                expand(new Frame(f.pos + 1, f.next), out);
            }
        }
        return out.build();
    }

    /** Adds the expansions of {@code stack} ({@code null}: the empty stack, the input may end). */
    private void expand(Frame stack, Stacks.Builder out) {
        Frame s = stack;
        while (true) {
            if (s == null) {
                out.accepting = true;
                return;
            }
            int element = code[s.pos];
            if (element == END) {
                s = s.next;
            } else if (element >= 0) {
                out.add(s);
                return;
            } else {
                int rule = -(element + 1);
                Frame rest = code[s.pos + 1] == END ? s.next : new Frame(s.pos + 1, s.next);
                for (int start : alternatives[rule]) {
                    expand(new Frame(start, rest), out);
                }
                return;
            }
        }
    }
}
