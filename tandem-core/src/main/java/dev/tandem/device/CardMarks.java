package dev.tandem.device;

import com.sun.management.HotSpotDiagnosticMXBean;
import java.lang.management.ManagementFactory;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Tells an application that embeds tandem, once, when its JVM runs the parallel or the serial
 * collector without {@code -XX:+UseCondCardMark}. Those collectors mark a card-table byte on
 * every reference store, one 64-byte line of cards per 32 KB of heap; the program thread and a
 * device core each store references into their own objects on every task, and where those lie
 * within 32 KB of each other both threads write one line per task. {@code bench overhead}'s chain
 * ran at about 110-130 ns a task that way instead of about 60 (see docs/architecture.md, the
 * launcher's "Conditional card marks"). The launcher passes the flag; G1 and ZGC need nothing.
 */
final class CardMarks {
    private static final Logger log = LoggerFactory.getLogger(CardMarks.class);
    private static final AtomicBoolean CHECKED = new AtomicBoolean();

    private CardMarks() {}

    /** The advice for a JVM with these options, or null when it needs none. */
    static String advice(boolean parallelGc, boolean serialGc, boolean conditionalCardMarks) {
        if (conditionalCardMarks || !(parallelGc || serialGc)) {
            return null;
        }
        return "this JVM runs the " + (parallelGc ? "parallel" : "serial") + " collector without -XX:+UseCondCardMark:"
                + " the program thread and the device's cores can then write one card-table line on every task"
                + " (up to twice the cost per task); run with -XX:+UseCondCardMark, as the tandem launcher does";
    }

    /**
     * Logs {@link #advice} for this JVM, once per JVM, from a virtual thread of its own: reading the
     * options loads the management classes, 26-33 ms in a cold JVM, which a worker's start does not
     * wait for. Silent where the JVM does not tell its options.
     */
    static void adviseOnce() {
        if (CHECKED.compareAndSet(false, true)) {
            Thread.ofVirtual().name("tandem-card-marks").start(CardMarks::advise);
        }
    }

    private static void advise() {
        String advice = adviceForThisJvm();
        if (advice != null) {
            log.info(advice);
        }
    }

    /** {@link #advice} for the options this JVM runs with; null where it needs none or does not tell them. */
    static String adviceForThisJvm() {
        try {
            HotSpotDiagnosticMXBean vm = ManagementFactory.getPlatformMXBean(HotSpotDiagnosticMXBean.class);
            return vm == null ? null
                    : advice(flag(vm, "UseParallelGC"), flag(vm, "UseSerialGC"), flag(vm, "UseCondCardMark"));
        } catch (RuntimeException | LinkageError unknown) {
            log.debug("could not read the JVM's collector options", unknown); // another JVM, or no jdk.management
            return null;
        }
    }

    private static boolean flag(HotSpotDiagnosticMXBean vm, String name) {
        return Boolean.parseBoolean(vm.getVMOption(name).getValue());
    }
}
