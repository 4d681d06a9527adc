package dev.tandem.trace;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tandem.TraceEvent;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(value = 60, unit = TimeUnit.SECONDS)
class TraceBufferTest {
    private static final int N = 5 * TraceBuffer.CHUNK + 17;

    private static void recordNumbered(TraceBuffer buffer, int from, int to) {
        for (int i = from; i < to; i++) {
            buffer.record(TraceEvent.Kind.TASK, i, i + 1, 0, 1, 0, i, "k", 0);
        }
    }

    @Test
    void streamingReaderSeesEveryEventOnceAndInOrderWhileItsOwnerRecords() {
        for (boolean retain : new boolean[] {false, true}) {
            TraceBuffer buffer = new TraceBuffer(retain, false, null);
            CompletableFuture<Void> owner = CompletableFuture.runAsync(() -> recordNumbered(buffer, 0, N),
                    command -> Thread.ofPlatform().start(command));
            long[] next = {0};
            List<String> errors = new ArrayList<>();
            while (next[0] < N) {
                buffer.drain((kind, start, end, thread, request, step, task, name, count) -> {
                    if (task != next[0] || start != task || end != task + 1 || !"k".equals(name)) {
                        errors.add("expected event " + next[0] + ", read task " + task + " [" + start + ", " + end + ")");
                    }
                    next[0]++;
                });
                Thread.onSpinWait();
            }
            owner.join();
            assertThat(buffer.drain((kind, start, end, thread, request, step, task, name, count) -> next[0]++))
                    .as("nothing left after every event was read").isZero();
            assertThat(errors).as("retain=%s", retain).isEmpty();
            assertThat(next[0]).isEqualTo(N);
        }
    }

    /**
     * Drained as they come, 40 full chunks' worth of events need only the growing first chunks
     * (256, 1024, 4096 entries) and a few full ones that the reader hands back: the same count
     * after 10 rounds as after 40.
     */
    @Test
    void aStreamedBufferReusesTheChunksItsReaderHasFinished() {
        TraceBuffer buffer = new TraceBuffer(false, false, null);
        int[] seen = {0};
        int afterTen = 0;
        for (int round = 0; round < 40; round++) {
            recordNumbered(buffer, round * TraceBuffer.CHUNK, (round + 1) * TraceBuffer.CHUNK);
            buffer.drain((kind, start, end, thread, request, step, task, name, count) -> seen[0]++);
            if (round == 9) {
                afterTen = buffer.chunksAllocated();
            }
        }
        assertThat(seen[0]).isEqualTo(40 * TraceBuffer.CHUNK);
        assertThat(buffer.chunksAllocated()).as("chunks allocated after 40 rounds").isEqualTo(afterTen)
                .isLessThanOrEqualTo(6);
    }

    @Test
    void aRetainedBufferKeepsEveryEventForSnapshots() {
        TraceBuffer buffer = new TraceBuffer(true, false, null);
        recordNumbered(buffer, 0, N);
        buffer.drain((kind, start, end, thread, request, step, task, name, count) -> {});
        List<TraceEvent> events = new ArrayList<>();
        buffer.readInto(events);
        assertThat(events).hasSize(N);
        for (int i = 0; i < N; i++) {
            assertThat(events.get(i).task()).isEqualTo(i);
        }
        // 256 + 1024 + 4096 entries in the first three chunks, then 4096 each: 4 more for the rest.
        assertThat(buffer.chunksAllocated()).isEqualTo(3 + (N - 256 - 1024 - 4096 + 4095) / 4096);
    }

    @Test
    void aStreamedBufferRefusesSnapshots() {
        TraceBuffer buffer = new TraceBuffer(false, false, null);
        assertThatThrownBy(() -> buffer.readInto(new ArrayList<>())).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("does not retain");
    }
}
