package dev.tandem.device;

/** Prints {@link CardMarks#adviceForThisJvm()} ("null" for none): {@link CardMarksTest} runs it in JVMs of its choosing. */
public final class CardMarksProbe {
    private CardMarksProbe() {}

    public static void main(String[] args) {
        System.out.println(CardMarks.adviceForThisJvm());
    }
}
